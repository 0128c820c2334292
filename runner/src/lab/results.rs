//! Results on disk: every file is written to a temporary file in the target directory
//! and renamed into place, so a reader (or a Ctrl-C) never sees half a file.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically (temp file in the same directory, fsync,
/// rename). Creates the directory when missing.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".handoff-")
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// A set of files to write together at the end of an experiment. Nothing touches
/// the disk until [`Outputs::commit`].
#[derive(Debug, Default)]
pub struct Outputs {
    files: Vec<(PathBuf, Vec<u8>)>,
}

impl Outputs {
    /// An empty set.
    pub fn new() -> Outputs {
        Outputs::default()
    }

    /// Adds a file.
    pub fn add(&mut self, path: PathBuf, bytes: Vec<u8>) {
        self.files.push((path, bytes));
    }

    /// The paths added so far.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.files.iter().map(|(p, _)| p.as_path())
    }

    /// Writes every file atomically, in order.
    pub fn commit(self) -> std::io::Result<Vec<PathBuf>> {
        let mut written = Vec::new();
        for (path, bytes) in self.files {
            write_atomic(&path, &bytes)
                .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            written.push(path);
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_creates_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/queue.json");
        write_atomic(&p, b"{\"a\":1}").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{\"a\":1}");
        write_atomic(&p, b"{\"a\":2}").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{\"a\":2}");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec!["queue.json"]);
    }

    #[test]
    fn outputs_write_nothing_until_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = Outputs::new();
        o.add(dir.path().join("a.json"), b"1".to_vec());
        o.add(dir.path().join("b.svg"), b"<svg/>".to_vec());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        drop(o);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut o = Outputs::new();
        o.add(dir.path().join("a.json"), b"1".to_vec());
        let written = o.commit().unwrap();
        assert_eq!(written, vec![dir.path().join("a.json")]);
        assert_eq!(std::fs::read(dir.path().join("a.json")).unwrap(), b"1");
    }

    #[test]
    fn write_into_a_file_path_fails_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("f");
        std::fs::write(&blocker, b"x").unwrap();
        assert!(write_atomic(&blocker.join("x.json"), b"1").is_err());
    }
}
