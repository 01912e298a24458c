//! Random-point keys cached on disk (ark-serialize), where the file system
//! keeps room for them.

use crate::{Error, ProvingKey, Result};
use ark_serialize::{CanonicalDeserialize, CanonicalSerialize, Compress, Validate};
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;

/// Where [`cached_key`]'s key came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyOrigin {
    /// Read from the cache file.
    Read,
    /// Made by the caller's function; `written` says whether it went into
    /// the cache (not when the file system would keep less than the
    /// asked-for room, or the write failed: a warning says why).
    Made {
        /// Whether the key is now in the cache.
        written: bool,
    },
}

/// The key cached as `dir/name.pk` (ark-serialize, uncompressed), or, when
/// that file is missing or unreadable, the one `make` returns, written
/// there when the file system keeps at least `keep_free_bytes` free after
/// it (whole-file write to a temporary name, then a rename: a crash or a
/// full disk leaves no partial key behind). `name` must name the key's
/// shape and seeds (for example `porep-2^24-i1-s7-k9`): a file of the name
/// is trusted as that key (its points are not validated, as for a key of
/// one's own making).
///
/// # Errors
/// `make`'s errors; [`Error::InvalidArgument`] for a `name` that is not a
/// plain file name. Cache failures are warnings, never errors.
pub fn cached_key(
    dir: &Path,
    name: &str,
    keep_free_bytes: u64,
    make: impl FnOnce() -> Result<ProvingKey>,
) -> Result<(ProvingKey, KeyOrigin)> {
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return Err(Error::InvalidArgument(format!(
            "cache name `{name}`: give a plain file name"
        )));
    }
    let path = dir.join(format!("{name}.pk"));
    if let Ok(f) = std::fs::File::open(&path) {
        match ProvingKey::deserialize_with_mode(
            BufReader::with_capacity(1 << 22, f),
            Compress::No,
            Validate::No,
        ) {
            Ok(pk) => return Ok((pk, KeyOrigin::Read)),
            Err(e) => tracing::warn!(
                target: "cuzk_prover",
                "cached key {} unreadable ({e}); making it again",
                path.display()
            ),
        }
    }
    let pk = make()?;
    let written = match write(dir, &path, &pk, keep_free_bytes) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(
                target: "cuzk_prover",
                "caching the key at {} failed: {e}",
                path.display()
            );
            false
        }
    };
    Ok((pk, KeyOrigin::Made { written }))
}

/// Writes `pk` to `path` (in `dir`) if the file system keeps
/// `keep_free_bytes` free after it; whether it did.
fn write(dir: &Path, path: &Path, pk: &ProvingKey, keep_free_bytes: u64) -> std::io::Result<bool> {
    std::fs::create_dir_all(dir)?;
    let size = pk.uncompressed_size() as u64;
    let st = rustix::fs::statvfs(dir)?;
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    if free < size.saturating_add(keep_free_bytes) {
        tracing::info!(
            target: "cuzk_prover",
            "not caching a key of {size} bytes at {}: {free} bytes free, {keep_free_bytes} to keep",
            path.display()
        );
        return Ok(false);
    }
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        std::process::id()
    ));
    let result = (|| {
        let mut w = BufWriter::with_capacity(1 << 22, std::fs::File::create(&tmp)?);
        pk.serialize_uncompressed(&mut w)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        w.flush()?;
        w.get_ref().sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map(|()| true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn key() -> Result<ProvingKey> {
        crate::synthetic::random_key(2, 30, 40, &mut rand::rngs::StdRng::seed_from_u64(5))
    }

    #[test]
    fn made_written_read_and_remade_when_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let (pk, o) = cached_key(dir.path(), "k", 0, key).unwrap();
        assert_eq!(o, KeyOrigin::Made { written: true });
        let (again, o) = cached_key(dir.path(), "k", 0, || panic!("cached")).unwrap();
        assert_eq!(o, KeyOrigin::Read);
        assert_eq!(again, pk);
        // A damaged file: made again, and written again.
        let path = dir.path().join("k.pk");
        let len = std::fs::metadata(&path).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
        let (remade, o) = cached_key(dir.path(), "k", 0, key).unwrap();
        assert_eq!(o, KeyOrigin::Made { written: true });
        assert_eq!(remade, pk);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
        // No temporary files left.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("k.pk")]);
    }

    #[test]
    fn not_written_without_room_and_names_checked() {
        let dir = tempfile::tempdir().unwrap();
        let (_, o) = cached_key(dir.path(), "k", u64::MAX, key).unwrap();
        assert_eq!(o, KeyOrigin::Made { written: false });
        assert!(!dir.path().join("k.pk").exists());
        for bad in ["", "a/b", ".hidden"] {
            assert!(cached_key(dir.path(), bad, 0, key).is_err(), "{bad}");
        }
        let e = cached_key(dir.path(), "k", 0, || {
            Err(Error::InvalidArgument("no key".into()))
        })
        .unwrap_err();
        assert!(e.to_string().contains("no key"));
    }
}
