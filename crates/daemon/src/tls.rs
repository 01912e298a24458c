//! TLS for the gRPC API.
//!
//! The daemon: with `tls_cert_file` and `tls_key_file` (PEM: the
//! certificate chain, its own certificate first, and the private key) its
//! TCP listener speaks gRPC over TLS, so that the bearer token of
//! [`crate::auth`] and the proofs' inputs do not travel in clear. With
//! `tls_client_ca_file` as well, every client must present a certificate
//! signed by that CA (mutual TLS). [`ServerTls::load`] reads and checks
//! the files at start, so that a bad one fails the start naming its path.
//!
//! The client (`cuzk --addr https://HOST:PORT`): [`client_config`] trusts
//! the CA certificates of `--tls-ca-file`, or without it the system's CA
//! certificates, and checks the daemon's certificate against the
//! address's host or `--tls-domain`.
//!
//! TLS is rustls on ring (tonic's `tls-ring`): no C library to link, no
//! cmake or nasm to build.

use crate::{Error, Result};
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

/// How long a client has to finish its TLS handshake before the daemon
/// drops the connection (so that half-open connections do not pile up).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The daemon's TLS settings, read and checked: its identity (certificate
/// chain and key) and, for mutual TLS, the CA its clients' certificates
/// must be signed by.
#[derive(Clone)]
pub struct ServerTls {
    config: ServerTlsConfig,
    cert_file: PathBuf,
    client_ca_file: Option<PathBuf>,
}

impl ServerTls {
    /// Reads the PEM certificate chain at `cert_file` and the private key
    /// at `key_file` and, with `client_ca_file`, the PEM CA certificates
    /// that clients' certificates must be signed by; checks that each file
    /// holds what it should and that the key is the certificate's.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file that cannot be read;
    /// [`Error::InvalidArgument`] naming the file that holds no PEM
    /// certificate (or key), or both files when the key is not the
    /// certificate's or rustls cannot use them.
    pub fn load(cert_file: &Path, key_file: &Path, client_ca_file: Option<&Path>) -> Result<Self> {
        let cert = read_certificates(cert_file, "TLS certificate")?;
        let key = read_private_key(key_file)?;
        let mut config = ServerTlsConfig::new()
            .identity(Identity::from_pem(cert, key))
            .timeout(HANDSHAKE_TIMEOUT);
        if let Some(ca) = client_ca_file {
            let pem = read_certificates(ca, "TLS client CA")?;
            config = config.client_ca_root(Certificate::from_pem(pem));
        }
        // tonic builds rustls's configuration here: a key that is not the
        // certificate's, or a kind of key rustls cannot sign with, fails
        // now rather than at the first connection.
        if let Err(e) = tonic::transport::Server::builder().tls_config(config.clone()) {
            return Err(Error::InvalidArgument(format!(
                "the TLS certificate {} and key {} cannot be used: {}. Give the private key of \
                 that certificate (PEM: PKCS#8, PKCS#1 or SEC1; RSA, ECDSA or Ed25519)",
                cert_file.display(),
                key_file.display(),
                error_chain(&e)
            )));
        }
        Ok(ServerTls {
            config,
            cert_file: cert_file.to_path_buf(),
            client_ca_file: client_ca_file.map(Path::to_path_buf),
        })
    }

    /// tonic's server configuration of these settings.
    pub fn server_config(&self) -> ServerTlsConfig {
        self.config.clone()
    }

    /// Whether clients must present a certificate (`tls_client_ca_file`).
    pub fn requires_client_certificates(&self) -> bool {
        self.client_ca_file.is_some()
    }
}

impl fmt::Debug for ServerTls {
    /// The files only: the key never reaches a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerTls")
            .field("cert_file", &self.cert_file)
            .field("client_ca_file", &self.client_ca_file)
            .finish_non_exhaustive()
    }
}

/// The content of the PEM file at `path`, checked to hold at least one
/// certificate and nothing unreadable as PEM; `what` names the file in
/// errors ("TLS certificate", "TLS CA").
///
/// # Errors
/// [`Error::Io`] naming the path when it cannot be read;
/// [`Error::InvalidArgument`] naming it when it is not PEM or holds no
/// certificate.
pub fn read_certificates(path: &Path, what: &str) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::io(format!("reading the {what} file {}", path.display()), e))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| {
            Error::InvalidArgument(format!(
                "the {what} file {} is not valid PEM: {e}",
                path.display()
            ))
        })?;
    if certs.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "the {what} file {} holds no PEM certificate (-----BEGIN CERTIFICATE-----): give a \
             PEM certificate file there",
            path.display()
        )));
    }
    Ok(bytes)
}

/// The content of the PEM file at `path`, checked to hold a private key
/// (PKCS#8, PKCS#1 or SEC1).
///
/// # Errors
/// [`Error::Io`] naming the path when it cannot be read;
/// [`Error::InvalidArgument`] naming it when it holds no private key.
pub fn read_private_key(path: &Path) -> Result<Vec<u8>> {
    let bytes = std::fs::read(path).map_err(|e| {
        Error::io(
            format!("reading the TLS private key file {}", path.display()),
            e,
        )
    })?;
    match PrivateKeyDer::from_pem_slice(&bytes) {
        Ok(_) => Ok(bytes),
        Err(pem::Error::NoItemsFound) => Err(Error::InvalidArgument(format!(
            "the TLS private key file {} holds no PEM private key (-----BEGIN PRIVATE KEY-----, \
             RSA PRIVATE KEY or EC PRIVATE KEY): give the certificate's key there",
            path.display()
        ))),
        Err(e) => Err(Error::InvalidArgument(format!(
            "the TLS private key file {} is not valid PEM: {e}",
            path.display()
        ))),
    }
}

/// A client's TLS settings for an `https://` address: trusting the PEM CA
/// certificates in `ca_file`, or without it the system's CA certificates;
/// checking the daemon's certificate against `domain`, or without it the
/// address's host (a name or an IP address); presenting the certificate
/// and key of `identity` (PEM files) to a daemon that requires client
/// certificates.
///
/// # Errors
/// [`Error::Io`] naming a file that cannot be read;
/// [`Error::InvalidArgument`] naming a file that holds no certificate (or
/// key).
pub fn client_config(
    ca_file: Option<&Path>,
    domain: Option<&str>,
    identity: Option<(&Path, &Path)>,
) -> Result<ClientTlsConfig> {
    let mut c = ClientTlsConfig::new().timeout(HANDSHAKE_TIMEOUT);
    c = match ca_file {
        Some(p) => c.ca_certificate(Certificate::from_pem(read_certificates(p, "TLS CA")?)),
        None => c.with_native_roots(),
    };
    if let Some(d) = domain {
        c = c.domain_name(d);
    }
    if let Some((cert, key)) = identity {
        let cert = read_certificates(cert, "TLS client certificate")?;
        c = c.identity(Identity::from_pem(cert, read_private_key(key)?));
    }
    Ok(c)
}

/// `e` and its sources, ": "-separated (tonic's transport errors say
/// little at the top: the cause is in the sources).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut next = e.source();
    while let Some(c) = next {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        next = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate for localhost and its key, PEM.
    fn self_signed() -> (String, String) {
        let c = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        (c.cert.pem(), c.signing_key.serialize_pem())
    }

    #[test]
    fn good_files_load_and_bad_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = self_signed();
        let (other_cert, _) = self_signed();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let cert_p = write("cert.pem", &cert);
        let key_p = write("key.pem", &key);
        let tls = ServerTls::load(&cert_p, &key_p, None).unwrap();
        assert!(!tls.requires_client_certificates());
        assert!(!format!("{tls:?}").contains("PRIVATE"));
        let tls = ServerTls::load(&cert_p, &key_p, Some(&cert_p)).unwrap();
        assert!(tls.requires_client_certificates());

        let shown = |p: &Path| p.display().to_string();
        let missing = dir.path().join("missing.pem");
        let e = ServerTls::load(&missing, &key_p, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&shown(&missing)) && e.contains("TLS certificate"),
            "{e}"
        );
        let e = ServerTls::load(&cert_p, &missing, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&shown(&missing)) && e.contains("private key"),
            "{e}"
        );
        // The files swapped: each names the file without what it needs.
        let e = ServerTls::load(&key_p, &key_p, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&shown(&key_p)) && e.contains("no PEM certificate"),
            "{e}"
        );
        let e = ServerTls::load(&cert_p, &cert_p, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&shown(&cert_p)) && e.contains("no PEM private key"),
            "{e}"
        );
        let junk = write("junk.pem", "-----BEGIN CERTIFICATE-----\n!!!\n");
        let e = ServerTls::load(&junk, &key_p, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&shown(&junk)) && e.contains("PEM"), "{e}");
        let empty = write("empty.pem", "");
        let e = ServerTls::load(&cert_p, &key_p, Some(&empty))
            .unwrap_err()
            .to_string();
        assert!(e.contains(&shown(&empty)) && e.contains("client CA"), "{e}");
        // Another certificate's key: both files named.
        let other_p = write("other.pem", &other_cert);
        let e = ServerTls::load(&other_p, &key_p, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&shown(&other_p)) && e.contains(&shown(&key_p)),
            "{e}"
        );

        // The client's side.
        client_config(Some(&cert_p), Some("localhost"), Some((&cert_p, &key_p))).unwrap();
        let e = client_config(Some(&missing), None, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains(&shown(&missing)) && e.contains("TLS CA"), "{e}");
        let e = client_config(Some(&cert_p), None, Some((&cert_p, &cert_p)))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no PEM private key"), "{e}");
    }
}
