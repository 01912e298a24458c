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
/// it and is not tmpfs (which would hold the key in host memory twice);
/// the write goes to a temporary name, then a rename, so a full disk
/// leaves no partial key behind, and temporary files of processes that
/// died while writing are removed. `name` must name the key's shape and
/// seeds, with a version of the generator (for example
/// `porep2-2^24-i1-s7-k9`, see [`crate::synthetic::PorepShaped::SHAPE_VERSION`]):
/// a file of the name is trusted as that key (its points are not
/// validated, as for a key of one's own making).
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
    remove_stale_temporaries(dir, name);
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

/// The temporary file a process with id `pid` writes `name`'s key to.
fn temporary(dir: &Path, name: &str, pid: u32) -> std::path::PathBuf {
    dir.join(format!(".{name}.pk.tmp-{pid}"))
}

/// Removes the temporary files of `name` left by processes that are gone
/// (killed while writing); another live process's write is left alone.
fn remove_stale_temporaries(dir: &Path, name: &str) {
    let prefix = format!(".{name}.pk.tmp-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// tmpfs's magic number in `statfs` (linux/magic.h).
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// Writes `pk` to `path` (in `dir`) if the file system keeps
/// `keep_free_bytes` free after it and is not tmpfs; whether it did.
fn write(dir: &Path, path: &Path, pk: &ProvingKey, keep_free_bytes: u64) -> std::io::Result<bool> {
    std::fs::create_dir_all(dir)?;
    #[allow(clippy::unnecessary_cast)] // f_type's width differs by target
    if rustix::fs::statfs(dir)?.f_type as i64 == TMPFS_MAGIC {
        tracing::info!(
            target: "cuzk_prover",
            "not caching a key at {}: tmpfs would hold it in host memory",
            path.display()
        );
        return Ok(false);
    }
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
    let name = path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = temporary(dir, &name, std::process::id());
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

    /// A directory for the tests, outside tmpfs (where keys are never
    /// written): the target directory's.
    fn dir() -> tempfile::TempDir {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/cache-tests");
        std::fs::create_dir_all(&base).unwrap();
        tempfile::tempdir_in(base).unwrap()
    }

    fn key() -> Result<ProvingKey> {
        crate::synthetic::random_key(2, 30, 40, &mut rand::rngs::StdRng::seed_from_u64(5))
    }

    #[test]
    fn made_written_read_and_remade_when_damaged() {
        let dir = dir();
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
    fn temporaries_of_dead_processes_are_removed() {
        let dir = dir();
        // No process has pid 2^31 - 2 (pid_max is at most 2^22).
        let dead = temporary(dir.path(), "k", (1 << 31) - 2);
        let mine = temporary(dir.path(), "k", std::process::id());
        let other = temporary(dir.path(), "other", (1 << 31) - 2);
        for f in [&dead, &mine, &other] {
            std::fs::write(f, b"partial").unwrap();
        }
        let (_, o) = cached_key(dir.path(), "k", 0, key).unwrap();
        assert_eq!(o, KeyOrigin::Made { written: true });
        assert!(!dead.exists(), "a dead writer's file is removed");
        assert!(other.exists(), "another key's file is left");
        assert!(dir.path().join("k.pk").exists());
    }

    #[test]
    fn not_written_without_room_and_names_checked() {
        let dir = dir();
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
