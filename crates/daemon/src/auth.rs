//! Bearer-token authentication of the gRPC API.
//!
//! With `auth_token_file` set, every Prover call must carry the metadata
//! `authorization: Bearer <token>`, the token being that file's content
//! with surrounding whitespace trimmed; other calls get UNAUTHENTICATED.
//! [`RequireToken`] is the server's interceptor, [`SendToken`] the
//! client's (the `cuzk` CLI's `--token-file`). The Prometheus endpoint is
//! not covered: it serves only counters and gauges, and belongs on a
//! private address.
//!
//! A token is a shared secret: make one with `openssl rand -hex 32`, and
//! keep the file readable only by the daemon's and the clients' users.
//! Over plain gRPC it travels in clear: on a network that is not trusted,
//! serve over TLS (`--tls-cert-file` and `--tls-key-file`, see
//! [`crate::tls`]; clients dial `https://`). A daemon with a token on an
//! address other hosts can reach, without TLS, logs a warning at start.

use crate::{Error, Result};
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::{Request, Status};

/// The gRPC metadata key that carries the token.
pub const METADATA_KEY: &str = "authorization";

/// A bearer token: printable ASCII without whitespace (so that it fits an
/// HTTP/2 header as is). Its `Debug` form hides it, so that it never
/// reaches a log.
#[derive(Clone)]
pub struct AuthToken(Arc<str>);

impl AuthToken {
    /// The token `token`, exactly as given.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when it is empty or holds anything but
    /// printable ASCII without whitespace.
    pub fn new(token: &str) -> Result<Self> {
        if token.is_empty() {
            return Err(Error::InvalidArgument(
                "the bearer token is empty: give at least one character (e.g. the output of \
                 `openssl rand -hex 32`)"
                    .into(),
            ));
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(Error::InvalidArgument(
                "the bearer token holds whitespace, control or non-ASCII characters: use \
                 printable ASCII only (e.g. the output of `openssl rand -hex 32`)"
                    .into(),
            ));
        }
        Ok(AuthToken(token.into()))
    }

    /// The token in the file at `path`: its content, surrounding
    /// whitespace (a trailing newline) trimmed.
    ///
    /// # Errors
    /// [`Error::Io`] naming the path when it cannot be read;
    /// [`Error::InvalidArgument`] naming the path when it is empty or the
    /// token is not printable ASCII (see [`AuthToken::new`]).
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading the token file {}", path.display()), e))?;
        let token = text.trim();
        if token.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "the token file {} is empty: write a token into it (e.g. `openssl rand -hex 32 \
                 > {}`)",
                path.display(),
                path.display()
            )));
        }
        AuthToken::new(token)
            .map_err(|e| Error::InvalidArgument(format!("the token file {}: {e}", path.display())))
    }

    /// Whether `presented` is this token, compared in constant time (see
    /// [`constant_time_eq`]).
    pub fn matches(&self, presented: &str) -> bool {
        constant_time_eq(self.0.as_bytes(), presented.as_bytes())
    }
}

impl fmt::Debug for AuthToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AuthToken(<redacted>)")
    }
}

/// Whether `a` and `b` are equal, in a time that depends only on their
/// lengths, not on where they differ: comparing a presented token so does
/// not tell an attacker how many of its leading bytes were right. The
/// lengths themselves are not secret (tokens of a fixed length are the
/// norm).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    // Keeps the optimizer from turning the fold into an early exit.
    std::hint::black_box(diff) == 0
}

/// The value of `authorization` metadata (`Bearer <token>`, the scheme
/// case-insensitive) without its scheme; `None` for another scheme.
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// How a client passes the token, in the UNAUTHENTICATED messages.
const HOW: &str = "send the metadata `authorization: Bearer <token>` with the token of the \
                   daemon's --auth-token-file (the cuzk CLI: --token-file PATH)";

/// The server's interceptor: passes a request that carries the token,
/// refuses any other with UNAUTHENTICATED; without a token it passes
/// every request.
#[derive(Clone, Debug)]
pub struct RequireToken {
    token: Option<AuthToken>,
}

impl RequireToken {
    /// An interceptor requiring `token`; `None`: requiring nothing.
    pub fn new(token: Option<AuthToken>) -> Self {
        RequireToken { token }
    }
}

impl Interceptor for RequireToken {
    fn call(&mut self, req: Request<()>) -> std::result::Result<Request<()>, Status> {
        let Some(token) = &self.token else {
            return Ok(req);
        };
        let presented = req
            .metadata()
            .get(METADATA_KEY)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer);
        match presented {
            Some(p) if token.matches(p) => Ok(req),
            Some(_) => {
                tracing::warn!(peer = ?req.remote_addr(), "refused a call with a wrong token");
                Err(Status::unauthenticated(format!(
                    "the bearer token does not match this cuzk-daemon's: {HOW}"
                )))
            }
            None => {
                tracing::warn!(peer = ?req.remote_addr(), "refused a call without a token");
                Err(Status::unauthenticated(format!(
                    "this cuzk-daemon requires a bearer token: {HOW}"
                )))
            }
        }
    }
}

/// The client's interceptor: adds `authorization: Bearer <token>` to every
/// request; without a token (the default) it adds nothing.
#[derive(Clone, Default)]
pub struct SendToken {
    header: Option<MetadataValue<Ascii>>,
}

impl SendToken {
    /// An interceptor sending `token`; `None`: sending none.
    pub fn new(token: Option<&AuthToken>) -> Self {
        let header = token.and_then(|t| {
            // An AuthToken is printable ASCII, so the value always parses.
            let mut v = MetadataValue::try_from(format!("Bearer {}", t.0)).ok()?;
            // Not indexed by HPACK, and hidden by the value's Debug.
            v.set_sensitive(true);
            Some(v)
        });
        SendToken { header }
    }
}

impl fmt::Debug for SendToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = if self.header.is_some() {
            "Some(<redacted>)"
        } else {
            "None"
        };
        write!(f, "SendToken {{ header: {shown} }}")
    }
}

impl Interceptor for SendToken {
    fn call(&mut self, mut req: Request<()>) -> std::result::Result<Request<()>, Status> {
        if let Some(h) = &self.header {
            req.metadata_mut().insert(METADATA_KEY, h.clone());
        }
        Ok(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_is_equality() {
        assert!(constant_time_eq(b"", b""));
        assert!(constant_time_eq(b"s3cret", b"s3cret"));
        assert!(!constant_time_eq(b"s3cret", b"s3creT"));
        assert!(!constant_time_eq(b"s3cret", b"S3cret"));
        assert!(!constant_time_eq(b"s3cret", b"s3cre"));
        assert!(!constant_time_eq(b"s3cret", b"s3crett"));
        assert!(!constant_time_eq(b"", b"x"));
        // Every single-bit difference anywhere is seen.
        let a = [0x5au8; 64];
        for i in 0..a.len() {
            for bit in 0..8 {
                let mut b = a;
                b[i] ^= 1 << bit;
                assert!(!constant_time_eq(&a, &b), "byte {i} bit {bit}");
            }
        }
    }

    #[test]
    fn tokens_from_files_and_the_interceptors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("token");
        std::fs::write(&p, "  abc-123\n").unwrap();
        let t = AuthToken::from_file(&p).unwrap();
        assert!(t.matches("abc-123"));
        assert!(!t.matches("abc-124"));
        assert_eq!(format!("{t:?}"), "AuthToken(<redacted>)");
        std::fs::write(&p, " \n").unwrap();
        let e = AuthToken::from_file(&p).unwrap_err().to_string();
        assert!(
            e.contains("is empty") && e.contains(&p.display().to_string()),
            "{e}"
        );
        std::fs::write(&p, "two words").unwrap();
        let e = AuthToken::from_file(&p).unwrap_err().to_string();
        assert!(
            e.contains("whitespace") && e.contains(&p.display().to_string()),
            "{e}"
        );
        let missing = dir.path().join("missing");
        let e = AuthToken::from_file(&missing).unwrap_err().to_string();
        assert!(e.contains(&missing.display().to_string()), "{e}");

        // The client's header passes the server's check; others do not.
        let mut server = RequireToken::new(Some(t.clone()));
        let mut client = SendToken::new(Some(&t));
        assert!(!format!("{client:?}").contains("abc"));
        let req = client.call(Request::new(())).unwrap();
        assert!(server.call(req).is_ok());
        let e = server.call(Request::new(())).unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unauthenticated);
        assert!(e.message().contains("requires a bearer token"), "{e}");
        let other = AuthToken::new("abc-124").unwrap();
        let req = SendToken::new(Some(&other)).call(Request::new(())).unwrap();
        let e = server.call(req).unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unauthenticated);
        assert!(e.message().contains("does not match"), "{e}");
        let mut req = Request::new(());
        req.metadata_mut()
            .insert(METADATA_KEY, "bearer  abc-123".parse().unwrap());
        assert!(server.call(req).is_ok(), "the scheme is case-insensitive");
        let mut req = Request::new(());
        req.metadata_mut()
            .insert(METADATA_KEY, "Basic abc-123".parse().unwrap());
        assert!(server.call(req).is_err());
        // Without a token, everything passes.
        assert!(RequireToken::new(None).call(Request::new(())).is_ok());
    }
}
