//! Results on disk: every file is written to a temporary file in the target directory
//! and renamed into place, so a reader (or a Ctrl-C) never sees half a file.

use super::chart::Chart;
use super::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically (temp file in the same directory, fsync,
/// rename). Creates the directory when missing. The file gets the mode a plain
/// `File::create` would give it (0666 less the umask), not the temporary file's 0600.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    use std::os::unix::fs::PermissionsExt;
    let mut tmp = tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o666))
        .prefix(".handoff-")
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Checks, before anything is measured, that results can be written under `out`: the
/// folder, or the nearest part of its path that exists, must be a folder this process
/// can create files in. Nothing is left behind (a probe file is made and removed).
///
/// ```
/// use runner::lab::results::check_writable;
/// let dir = tempfile::tempdir().unwrap();
/// assert!(check_writable(&dir.path().join("new/sub")).is_ok());
/// assert!(!dir.path().join("new").exists());
/// assert!(check_writable(std::path::Path::new("/proc/x")).is_err());
/// ```
pub fn check_writable(out: &Path) -> Result<(), Error> {
    let bad = |why: String| Error::Usage(format!("--out {}: {why}", out.display()));
    let mut probe_dir = out;
    loop {
        match std::fs::metadata(probe_dir) {
            Ok(m) if m.is_dir() => break,
            Ok(_) if probe_dir == out => return Err(bad("exists and is not a folder".into())),
            Ok(_) => return Err(bad(format!("{} is not a folder", probe_dir.display()))),
            Err(_) => match probe_dir.parent() {
                Some(p) if !p.as_os_str().is_empty() => probe_dir = p,
                _ => {
                    probe_dir = Path::new(".");
                    break;
                }
            },
        }
    }
    tempfile::Builder::new()
        .prefix(".handoff-probe-")
        .tempfile_in(probe_dir)
        .map(drop)
        .map_err(|e| {
            // tempfile names its random file in the message; the folder is what counts.
            let why = e.to_string();
            let why = why.split(" at path ").next().unwrap_or(&why).to_string();
            bad(format!(
                "cannot create files in {}: {why}",
                probe_dir.display()
            ))
        })
}

/// A set of files to write together at the end of an experiment. Nothing touches
/// the disk until [`Outputs::commit`].
#[derive(Debug, Default)]
pub struct Outputs {
    files: Vec<(PathBuf, Vec<u8>)>,
    charts: Vec<(String, Chart)>,
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

    /// Adds a chart: its SVG as a file at `path`, and its data for the results JSON
    /// ([`chart_data`](Outputs::chart_data)) under the file's name.
    pub fn chart(&mut self, path: PathBuf, chart: Chart) -> Result<(), Error> {
        let chart = chart.finite();
        let svg = chart.render()?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.charts.push((name, chart));
        self.add(path, svg.into_bytes());
        Ok(())
    }

    /// Every chart added, as the results' `chart_data`: `[{ "file", "chart" }]`.
    pub fn chart_data(&self) -> serde_json::Value {
        serde_json::Value::Array(
            self.charts
                .iter()
                .map(|(file, chart)| serde_json::json!({ "file": file, "chart": chart }))
                .collect(),
        )
    }

    /// Adds every file and chart of `other`, after these.
    pub fn extend(&mut self, other: Outputs) {
        self.files.extend(other.files);
        self.charts.extend(other.charts);
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
    fn a_written_file_has_the_mode_a_created_one_has() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        std::fs::File::create(&plain).unwrap();
        let ours = dir.path().join("ours.json");
        write_atomic(&ours, b"{}").unwrap();
        let mode = |p: &std::path::Path| p.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&ours), mode(&plain));
    }

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
