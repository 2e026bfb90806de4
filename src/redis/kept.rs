//! What a host keeps of its servers between runs, in the run's local directory: a
//! Cluster's slot map (`routed.rs`), a Sentinel master's address (`connect.rs`), the
//! run ID of each server it talked to (`life.rs`). Kept only where the user alone can write (a file planted by another
//! user could send the password to another server, or say a restarted server is the
//! one it was); a file of another owner, one others can write or a malformed one is
//! read as nothing kept. Best effort: what cannot be kept is learned again.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static DIR: OnceLock<PathBuf> = OnceLock::new();

/// Keeps this process's files in `dir` (the run's local directory), when it is the
/// user's own and no one else can write in it; otherwise nothing is kept.
pub fn keep_in(dir: PathBuf) {
    use std::os::unix::fs::MetadataExt;
    let private = std::fs::metadata(&dir).is_ok_and(|m| {
        m.is_dir() && m.uid() == nix::unistd::geteuid().as_raw() && m.mode() & 0o022 == 0
    });
    if private {
        let _ = DIR.set(dir);
    }
}

/// Whether this process keeps anything (a private local directory was given).
pub fn enabled() -> bool {
    DIR.get().is_some()
}

/// The file a `kind` of thing is kept in for `identity` (a server's URL without its
/// password): `<kind>.<hash of identity>.<ext>`; `None` when nothing is kept.
pub fn file(kind: &str, identity: &str, ext: &str) -> Option<PathBuf> {
    let dir = DIR.get()?;
    let hash = crate::hash::fnv1a(identity.as_bytes());
    Some(dir.join(format!("{kind}.{hash:016x}.{ext}")))
}

/// The lines after `header` and `identity` of the `kind` of file kept for `identity`
/// (see [`file`]), if it is ours and begins so; `None` otherwise.
pub fn load(kind: &str, ext: &str, header: &str, identity: &str) -> Option<Vec<String>> {
    let text = read(&file(kind, identity, ext)?)?;
    let mut lines = text.lines();
    if lines.next()? != header || lines.next()? != identity {
        return None;
    }
    Some(lines.map(str::to_string).collect())
}

/// Keeps `body` (lines) after `header` and `identity` as the `kind` of file for
/// `identity`; nothing when nothing is kept.
pub fn store(kind: &str, ext: &str, header: &str, identity: &str, body: &str) {
    if let Some(path) = file(kind, identity, ext) {
        write(&path, &format!("{header}\n{identity}\n{body}"));
    }
}

/// A kept file's text, if the file is ours and written by none but us.
pub fn read(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    let ours = meta.uid() == nix::unistd::geteuid().as_raw();
    if !meta.is_file() || !ours || meta.mode() & 0o022 != 0 {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// Keeps `text`: written beside, then renamed over, so that a reader never sees half a
/// file; mode 0600.
pub fn write(path: &Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if written.is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
    let _ = std::fs::remove_file(&tmp);
}
