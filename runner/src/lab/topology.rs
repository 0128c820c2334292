//! Which CPUs this process may use and which of them share an L3 cache, read from
//! `/proc/self/status` and sysfs. Every reader takes its root as a parameter so the
//! tests can point it at fixture trees.

use std::fs;
use std::path::{Path, PathBuf};

/// Parses a kernel CPU list such as `0-3,8,10-11` (sysfs `online`,
/// `shared_cpu_list`, `Cpus_allowed_list`). Sorted, without duplicates.
///
/// ```
/// assert_eq!(runner::lab::topology::parse_cpu_list("0-2,5").unwrap(), vec![0, 1, 2, 5]);
/// assert!(runner::lab::topology::parse_cpu_list("3-1").is_err());
/// ```
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |t: &str| {
            t.trim()
                .parse::<usize>()
                .map_err(|_| format!("bad cpu number {t:?} in cpu list {s:?}"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if a > b {
                    return Err(format!("bad cpu range {part:?} in cpu list {s:?}"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Formats CPUs the kernel's way: `[0, 1, 2, 5]` becomes `0-2,5`.
///
/// ```
/// assert_eq!(runner::lab::topology::format_cpu_list(&[0, 1, 2, 5]), "0-2,5");
/// ```
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// The CPUs of this machine and of this process, and the L3 groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    /// CPUs the kernel has online (`/sys/devices/system/cpu/online`).
    pub online: Vec<usize>,
    /// CPUs this process may run on (`sched_getaffinity`, as `Cpus_allowed_list`).
    pub allowed: Vec<usize>,
    /// Sets of online CPUs that share one level-3 cache (empty when sysfs has none).
    pub l3_groups: Vec<Vec<usize>>,
    /// Online NUMA nodes and their CPUs (`/sys/devices/system/node`), lowest node
    /// first; empty when sysfs has no node directory (a kernel without NUMA: one node).
    pub nodes: Vec<(u32, Vec<usize>)>,
}

impl Topology {
    /// Reads the running machine.
    pub fn read() -> Topology {
        let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
        let allowed = allowed_from_status(&status);
        let mut t = Topology::read_from(Path::new("/sys"), allowed);
        if t.allowed.is_empty() {
            // No /proc (or an unreadable one): trust the affinity API instead.
            t.allowed = core_affinity::get_core_ids()
                .unwrap_or_default()
                .into_iter()
                .map(|c| c.id)
                .collect();
            t.allowed.sort_unstable();
        }
        if t.online.is_empty() {
            t.online = t.allowed.clone();
        }
        t
    }

    /// Reads a sysfs tree rooted at `sys` (the directory that holds `devices/`), with
    /// the allowed set given.
    pub fn read_from(sys: &Path, allowed: Vec<usize>) -> Topology {
        let cpu_dir = sys.join("devices/system/cpu");
        let online = fs::read_to_string(cpu_dir.join("online"))
            .ok()
            .and_then(|s| parse_cpu_list(&s).ok())
            .unwrap_or_default();
        let mut l3_groups: Vec<Vec<usize>> = Vec::new();
        for &cpu in &online {
            if let Some(group) = l3_of(&cpu_dir.join(format!("cpu{cpu}/cache"))) {
                if !l3_groups.contains(&group) {
                    l3_groups.push(group);
                }
            }
        }
        l3_groups.sort();
        Topology {
            online,
            allowed,
            l3_groups,
            nodes: nodes_of(&sys.join("devices/system/node")),
        }
    }

    /// The L3 group holding `cpu`, if sysfs named one.
    pub fn l3_group_of(&self, cpu: usize) -> Option<&[usize]> {
        self.l3_groups
            .iter()
            .find(|g| g.contains(&cpu))
            .map(Vec::as_slice)
    }

    /// Whether two CPUs share an L3 (`None` when sysfs doesn't say).
    pub fn share_l3(&self, a: usize, b: usize) -> Option<bool> {
        let ga = self.l3_group_of(a)?;
        Some(ga.contains(&b))
    }
}

/// `Cpus_allowed_list` from a `/proc/<pid>/status` text (empty when absent).
pub fn allowed_from_status(status: &str) -> Vec<usize> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(|v| parse_cpu_list(v).ok())
        .unwrap_or_default()
}

/// The online nodes under `node_dir` (`online`) with their CPUs (`node<N>/cpulist`;
/// a node without CPUs, memory only, has an empty list). Empty when there is no
/// `online` file.
fn nodes_of(node_dir: &Path) -> Vec<(u32, Vec<usize>)> {
    let Some(online) = fs::read_to_string(node_dir.join("online"))
        .ok()
        .and_then(|s| parse_cpu_list(&s).ok())
    else {
        return Vec::new();
    };
    online
        .into_iter()
        .map(|n| {
            let cpus = fs::read_to_string(node_dir.join(format!("node{n}/cpulist")))
                .ok()
                .and_then(|s| parse_cpu_list(&s).ok())
                .unwrap_or_default();
            (n as u32, cpus)
        })
        .collect()
}

/// Finds the cache directory whose `level` file says 3 (index numbers differ between
/// machines, so they are not trusted) and returns its `shared_cpu_list`.
fn l3_of(cache_dir: &Path) -> Option<Vec<usize>> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(cache_dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("index"))
        })
        .collect();
    dirs.sort();
    dirs.into_iter().find_map(|d| {
        let level = fs::read_to_string(d.join("level")).ok()?;
        if level.trim() != "3" {
            return None;
        }
        let kind = fs::read_to_string(d.join("type")).unwrap_or_default();
        if kind.trim() == "Instruction" {
            return None;
        }
        parse_cpu_list(&fs::read_to_string(d.join("shared_cpu_list")).ok()?).ok()
    })
}

/// Tests: the development machine's shape, two cores sharing one L3.
#[cfg(test)]
impl Topology {
    /// A machine's sysfs saved as a fixture (`runner/tests/fixtures/sys/<name>.sys`:
    /// `path<TAB>content` lines, `#` comments), read as this process would, every
    /// online CPU allowed.
    pub(crate) fn fixture(name: &str) -> Topology {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sys")
            .join(format!("{name}.sys"));
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let dir = tempfile::tempdir().unwrap();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let (file, content) = line.split_once('\t').expect("path<TAB>content");
            let file = dir.path().join(file);
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(&file, format!("{content}\n")).unwrap();
        }
        let mut t = Topology::read_from(dir.path(), Vec::new());
        t.allowed = t.online.clone();
        t
    }

    pub(crate) fn two_cores() -> Topology {
        Topology {
            online: vec![0, 1],
            allowed: vec![0, 1],
            l3_groups: vec![vec![0, 1]],
            nodes: vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes a fixture sysfs tree: `cpus` online, caches per cpu as
    /// (index name, level, type, shared list).
    fn fixture(online: &str, caches: &[(usize, &str, u32, &str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let cpu = dir.path().join("devices/system/cpu");
        fs::create_dir_all(&cpu).unwrap();
        fs::write(cpu.join("online"), format!("{online}\n")).unwrap();
        for (c, index, level, kind, shared) in caches {
            let d = cpu.join(format!("cpu{c}/cache/{index}"));
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("level"), format!("{level}\n")).unwrap();
            fs::write(d.join("type"), format!("{kind}\n")).unwrap();
            fs::write(d.join("shared_cpu_list"), format!("{shared}\n")).unwrap();
        }
        dir
    }

    #[test]
    fn cpu_lists_parse_and_format_round_trip() {
        assert_eq!(parse_cpu_list("0").unwrap(), vec![0]);
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list("2,1,1").unwrap(), vec![1, 2]);
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<usize>::new());
        assert!(parse_cpu_list("a").is_err());
        assert!(parse_cpu_list("1-").is_err());
        assert!(parse_cpu_list("5-2").is_err());
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn two_ccx_machine_groups_by_level_not_by_index() {
        // Ryzen-like: 4 cpus per L3. cpu 0-3 list L3 at index3, cpu 4-7 at index2
        // (a machine may number caches differently), plus L1i/L1d/L2 entries.
        let mut caches = Vec::new();
        for c in 0..8usize {
            caches.push((c, "index0", 1, "Data", ""));
            caches.push((c, "index1", 1, "Instruction", ""));
            if c < 4 {
                caches.push((c, "index2", 2, "Unified", ""));
                caches.push((c, "index3", 3, "Unified", "0-3"));
            } else {
                caches.push((c, "index2", 3, "Unified", "4-7"));
                caches.push((c, "index3", 2, "Unified", ""));
            }
        }
        let dir = fixture("0-7", &caches);
        let t = Topology::read_from(dir.path(), vec![0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(t.online, (0..8).collect::<Vec<_>>());
        assert_eq!(t.l3_groups, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert_eq!(t.share_l3(4, 5), Some(true));
        assert_eq!(t.share_l3(3, 4), Some(false));
    }

    #[test]
    fn machine_without_l3_has_no_groups() {
        let dir = fixture(
            "0-1",
            &[(0, "index0", 1, "Data", "0"), (1, "index0", 1, "Data", "1")],
        );
        let t = Topology::read_from(dir.path(), vec![0, 1]);
        assert!(t.l3_groups.is_empty());
        assert_eq!(t.share_l3(0, 1), None);
    }

    #[test]
    fn missing_sysfs_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let t = Topology::read_from(dir.path(), vec![0]);
        assert!(t.online.is_empty() && t.l3_groups.is_empty());
    }

    #[test]
    fn allowed_list_comes_from_proc_status() {
        let status =
            "Name:\trunner\nCpus_allowed:\tf\nCpus_allowed_list:\t0-2,4\nMems_allowed:\t1\n";
        assert_eq!(allowed_from_status(status), vec![0, 1, 2, 4]);
        assert!(allowed_from_status("Name: x\n").is_empty());
    }

    fn list(s: &str) -> Vec<usize> {
        parse_cpu_list(s).unwrap()
    }

    #[test]
    fn a_two_socket_xeon_has_an_l3_and_a_node_per_socket() {
        let t = Topology::fixture("xeon-2s");
        assert_eq!(t.online, list("0-79"));
        assert_eq!(t.l3_groups, vec![list("0-19,40-59"), list("20-39,60-79")]);
        assert_eq!(
            t.nodes,
            vec![(0, list("0-19,40-59")), (1, list("20-39,60-79"))]
        );
        assert_eq!(t.share_l3(4, 44), Some(true));
        assert_eq!(t.share_l3(4, 24), Some(false));
    }

    #[test]
    fn a_many_ccd_epyc_has_an_l3_per_ccd_and_four_nodes_in_nps4() {
        let t = Topology::fixture("epyc-nps4");
        assert_eq!(t.online, list("0-127"));
        assert_eq!(t.l3_groups.len(), 8);
        assert_eq!(t.l3_groups[0], list("0-7,64-71"));
        assert_eq!(t.l3_groups[7], list("56-63,120-127"));
        assert_eq!(t.share_l3(7, 8), Some(false));
        assert_eq!(t.share_l3(7, 71), Some(true));
        assert_eq!(t.nodes.len(), 4);
        assert_eq!(t.nodes[0], (0, list("0-15,64-79")));
        assert_eq!(t.nodes[3], (3, list("48-63,112-127")));
    }

    #[test]
    fn the_emulated_machine_has_two_l3_groups_and_two_nodes() {
        let t = Topology::fixture("many-core");
        assert_eq!(t.online, list("0-7"));
        assert_eq!(t.l3_groups, vec![list("0-3"), list("4-7")]);
        assert_eq!(t.nodes, vec![(0, list("0-3")), (1, list("4-7"))]);
    }

    #[test]
    fn the_development_vm_has_one_l3_and_one_node() {
        let t = Topology::fixture("kvm-2core");
        assert_eq!(t.online, list("0-1"));
        assert_eq!(t.l3_groups, vec![list("0-1")]);
        assert_eq!(t.nodes, vec![(0, list("0-1"))]);
    }

    #[test]
    fn a_kernel_without_numa_has_no_node_directory() {
        let t = Topology::read_from(fixture("0-1", &[]).path(), vec![0, 1]);
        assert!(t.nodes.is_empty());
    }

    #[test]
    fn this_machine_reads_something() {
        let t = Topology::read();
        assert!(!t.allowed.is_empty());
        assert!(t.allowed.iter().all(|c| t.online.contains(c)));
    }
}
