//! `--ready-file`: a file that exists while this copy runs its command under the lock
//! (a readiness probe for a hot standby). Created atomically (written beside, then
//! renamed), removed before the command is stopped and when it ends.

use std::io::Write;
use std::path::Path;

/// Creates `path` holding `contents` (one line), replacing what was there.
pub fn create(path: &Path, contents: &str) -> std::io::Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(contents.as_bytes())?;
    file.write_all(b"\n")?;
    drop(file);
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Removes `path` (gone already is fine).
pub fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}

#[cfg(test)]
mod tests {
    #[test]
    fn created_whole_and_removed() {
        let dir = std::env::temp_dir().join(format!("redlock-ready-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("leader");
        super::create(&path, "{\"fence\":3}").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"fence\":3}\n");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no temp file left"
        );
        super::remove(&path);
        super::remove(&path);
        assert!(!path.exists());
        let _ = std::fs::remove_dir(&dir);
    }
}
