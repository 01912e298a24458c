//! Assignment files that clients name by path, and the directories they
//! may lie under (`Config::assignment_dirs`). A file is opened so that the
//! file read is the one checked: beneath a directory held open since start
//! (Linux's openat2 with `RESOLVE_BENEATH`: no component, link or `..` may
//! leave it, and one that tries gets the answer a missing file gets),
//! without blocking, and only if it is a regular file. The submission and
//! each worker that reads the file open it this way.

use crate::{Error, Result};
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Why a client's file could not be opened.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The path is refused: not absolute, outside the directories (or
    /// missing: one answer for both), or not a regular file. The job's
    /// fault.
    Path(Error),
    /// A path allowed that this host cannot open now (without assignment
    /// directories only): this host's fault.
    Unreadable(Error),
}

/// One assignment directory: as configured, resolved, and held open (a
/// directory renamed or replaced by a link after start is not followed).
#[derive(Debug)]
struct Dir {
    given: PathBuf,
    real: PathBuf,
    fd: OwnedFd,
}

/// The assignment directories; none: any absolute path the daemon's user
/// can read.
#[derive(Debug, Default)]
pub(crate) struct AssignmentDirs {
    dirs: Vec<Dir>,
}

/// `given`, each resolved: absolute, its links resolved, a directory.
///
/// # Errors
/// [`Error::Io`] naming one that cannot be resolved (say, missing);
/// [`Error::InvalidArgument`] naming one that is not a directory.
pub(crate) fn resolve(given: &[PathBuf]) -> Result<Vec<PathBuf>> {
    given
        .iter()
        .map(|d| match std::fs::canonicalize(d) {
            Ok(c) if c.is_dir() => Ok(c),
            Ok(_) => Err(Error::InvalidArgument(format!(
                "assignment directory {} (assignment_dirs) is not a directory",
                d.display()
            ))),
            Err(e) => Err(Error::io(
                format!(
                    "resolving the assignment directory {} (assignment_dirs; make it, or drop \
                     it from the list)",
                    d.display()
                ),
                e,
            )),
        })
        .collect()
}

impl AssignmentDirs {
    /// The directories `given`, resolved and opened.
    ///
    /// # Errors
    /// As [`resolve`]; [`Error::Io`] naming a directory that cannot be
    /// opened, or when this kernel lacks openat2 (Linux 5.6 or later is
    /// needed for assignment directories).
    pub(crate) fn new(given: &[PathBuf]) -> Result<Self> {
        let real = resolve(given)?;
        let dirs = given
            .iter()
            .zip(real)
            .map(|(given, real)| {
                let fd: OwnedFd = File::options()
                    .read(true)
                    .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
                    .open(&real)
                    .map_err(|e| {
                        Error::io(
                            format!("opening the assignment directory {}", real.display()),
                            e,
                        )
                    })?
                    .into();
                // The directory itself, opened beneath itself: fails here,
                // not at the first submission, where openat2 is missing.
                openat2_beneath(&fd, Path::new("."), libc::O_PATH).map_err(|e| {
                    Error::io(
                        format!(
                            "opening beneath the assignment directory {} (openat2: Linux 5.6 \
                             or later is needed for assignment_dirs)",
                            real.display()
                        ),
                        e,
                    )
                })?;
                Ok(Dir {
                    given: given.clone(),
                    real,
                    fd,
                })
            })
            .collect::<Result<_>>()?;
        Ok(AssignmentDirs { dirs })
    }

    /// The resolved directories (for the start-up log).
    pub(crate) fn shown(&self) -> Vec<&Path> {
        self.dirs.iter().map(|d| d.real.as_path()).collect()
    }

    /// Opens the client's assignment file `p` for reading: an absolute
    /// path; with directories, one that starts with a directory's
    /// configured or resolved name and whose rest resolves beneath it
    /// (links and `..` included); a regular file, opened without blocking
    /// (a FIFO is refused, not waited on) and never as a controlling
    /// terminal. Without directories, `p` is first opened as a handle that
    /// opens nothing (`O_PATH`), checked to be a regular file, then
    /// reopened through that handle, so that no device or FIFO is opened.
    /// Returns the file and the path a job keeps: the directory's resolved
    /// name joined with the rest of `p` (`p` itself without directories).
    ///
    /// # Errors
    /// [`Refusal::Path`] when `p` is refused (with directories, one message
    /// whether or not a file outside them exists); [`Refusal::Unreadable`]
    /// when, without directories, `p` cannot be opened.
    pub(crate) fn open(&self, p: &Path) -> std::result::Result<(File, PathBuf), Refusal> {
        if !p.is_absolute() {
            return Err(Refusal::Path(refused(
                p,
                "not an absolute path: give the file's absolute path on the daemon's host",
            )));
        }
        if self.dirs.is_empty() {
            let unreadable = |e| {
                Refusal::Unreadable(Error::io(format!("opening assignment {}", p.display()), e))
            };
            let handle = File::options()
                .read(true)
                .custom_flags(libc::O_PATH)
                .open(p)
                .map_err(unreadable)?;
            if !is_regular(&handle) {
                return Err(Refusal::Path(refused(
                    p,
                    "not a regular file: give an assignment file",
                )));
            }
            let f = File::options()
                .read(true)
                .custom_flags(libc::O_NOCTTY)
                .open(format!("/proc/self/fd/{}", handle.as_raw_fd()))
                .map_err(unreadable)?;
            return Ok((f, p.to_path_buf()));
        }
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY;
        for d in &self.dirs {
            for name in [&d.real, &d.given] {
                let Ok(rest) = p.strip_prefix(name) else {
                    continue;
                };
                if rest.as_os_str().is_empty() {
                    continue;
                }
                if let Ok(f) = openat2_beneath(&d.fd, rest, flags) {
                    if is_regular(&f) {
                        return Ok((f, d.real.join(rest)));
                    }
                }
            }
        }
        Err(Refusal::Path(self.outside(p)))
    }

    /// The refusal of `p` as no file under the directories.
    fn outside(&self, p: &Path) -> Error {
        let dirs = self
            .dirs
            .iter()
            .map(|d| d.real.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        refused(
            p,
            &format!(
                "no readable file under the daemon's assignment directories ({dirs}): put it \
                 in one"
            ),
        )
    }
}

/// The refusal of a client's assignment path `p`: `what` was wrong.
fn refused(p: &Path, what: &str) -> Error {
    Error::InvalidArgument(format!(
        "assignment path {}: {what}, or send the assignment inline or streamed",
        p.display()
    ))
}

/// Whether `f` is a regular file.
fn is_regular(f: &File) -> bool {
    f.metadata().is_ok_and(|m| m.is_file())
}

/// `struct open_how` of linux/openat2.h (three u64s), for openat2(2).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// openat2(2) of `rel` beneath directory `dir` with open `flags` (plus
/// `O_CLOEXEC`): `RESOLVE_BENEATH` (no component, link or `..` may leave
/// `dir`; an absolute `rel` or link is refused) and
/// `RESOLVE_NO_MAGICLINKS` (no `/proc` links).
fn openat2_beneath(dir: &OwnedFd, rel: &Path, flags: i32) -> std::io::Result<File> {
    let c = std::ffi::CString::new(rel.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: openat2 reads the NUL-terminated `c` and `how` (of the size
    // passed) during the call only, and `dir` is an open descriptor.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a descriptor openat2 has just returned: open, and
    // owned by nothing else.
    Ok(unsafe { File::from_raw_fd(fd as i32) })
}

#[cfg(test)]
mod tests {
    use super::{AssignmentDirs, Refusal};
    use std::path::{Path, PathBuf};

    /// With directories: files beneath them only, links and `..` resolved
    /// inside; a link, `..` or directory swap leading out refused with the
    /// answer a missing file gets; FIFOs and directories refused without
    /// blocking. Without: any regular file by an absolute path.
    #[test]
    fn client_files_open_only_beneath_their_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let (inside, outside) = (root.join("in"), root.join("out"));
        std::fs::create_dir_all(inside.join("sub")).unwrap();
        std::fs::create_dir_all(outside.join("secretdir")).unwrap();
        let a = inside.join("sub/a.asg");
        std::fs::write(&a, b"a").unwrap();
        std::fs::write(outside.join("secret"), b"s").unwrap();
        let link_in = inside.join("link-in.asg");
        std::os::unix::fs::symlink("sub/a.asg", &link_in).unwrap();
        let link_out = inside.join("link-out.asg");
        std::os::unix::fs::symlink(outside.join("secret"), &link_out).unwrap();
        let link_gone = inside.join("link-gone.asg");
        std::os::unix::fs::symlink(outside.join("gone"), &link_gone).unwrap();
        std::os::unix::fs::symlink(&outside, inside.join("dir-out")).unwrap();
        let fifo = inside.join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());

        let dirs = AssignmentDirs::new(std::slice::from_ref(&inside)).unwrap();
        let kept = |p: &Path| dirs.open(p).map(|(_, k)| k).unwrap();
        assert_eq!(kept(&a), a);
        assert_eq!(kept(&link_in), link_in);
        let dotted = inside.join("sub/../sub/./a.asg");
        assert_eq!(kept(&dotted), dotted);
        // The directory by its configured, unresolved name.
        let spelled = root.join("in/.").join("..").join("in");
        let by_name = AssignmentDirs::new(std::slice::from_ref(&spelled)).unwrap();
        assert!(by_name.open(&spelled.join("sub/a.asg")).is_ok());

        let refusal = |p: &Path| match dirs.open(p) {
            Err(Refusal::Path(e)) => e.to_string().replacen(
                &format!("assignment path {}:", p.display()),
                "assignment path P:",
                1,
            ),
            other => panic!("{}: {other:?}", p.display()),
        };
        let missing = refusal(&outside.join("gone"));
        assert!(missing.contains("under the daemon's assignment directories"));
        for p in [
            outside.join("secret"),
            inside.join("../out/secret"),
            // Out and back in, through a directory that exists or not.
            inside.join("../out/secretdir/../../in/sub/a.asg"),
            inside.join("../out/nodir/../../in/sub/a.asg"),
            link_out.clone(),
            link_gone.clone(),
            inside.join("dir-out/secret"),
            inside.join("sub"),
            inside.clone(),
            fifo.clone(),
        ] {
            assert_eq!(refusal(&p), missing, "{}", p.display());
        }
        assert!(refusal(Path::new("in/sub/a.asg")).contains("not an absolute path"));

        let any = AssignmentDirs::default();
        assert_eq!(any.open(&link_out).unwrap().1, link_out);
        match any.open(&fifo) {
            Err(Refusal::Path(e)) => assert!(e.to_string().contains("not a regular file")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            any.open(&outside.join("gone")),
            Err(Refusal::Unreadable(_))
        ));
        let missing_dir: PathBuf = root.join("no-such-dir");
        let e = AssignmentDirs::new(std::slice::from_ref(&missing_dir)).unwrap_err();
        assert!(e.to_string().contains(&missing_dir.display().to_string()));
    }
}
