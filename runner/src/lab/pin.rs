//! Pin lists: parsing, validation against the allowed CPU set, machine-adapted
//! defaults, pinning a thread and checking that it really runs where it was put.

use super::error::{Error, Result};
use super::topology::{format_cpu_list, Topology};
use serde::{Deserialize, Serialize};

/// Where an experiment's threads run, as its validation decided: its measured roles and
/// their cores, in order (the first two are the pair the noise probe watches: the
/// producer and the consumer, or the first two of threads that are alike), the runner's
/// control thread's core if it has one, and what had to be said about the placement.
///
/// ```
/// use runner::lab::pin::Placement;
/// let p = Placement::pair(4, 5).with("background", 6).with("background", 7).with_control(Some(8));
/// assert_eq!((p.producer(), p.consumer(), p.control()), (4, 5, Some(8)));
/// assert_eq!(p.cores_of("background"), [6, 7]);
/// assert_eq!(p.threads(), [4, 5, 6, 7]);
/// let alike = Placement::alike(&[0, 1, 2]).noted("3 threads");
/// assert_eq!(alike.roles().next(), Some(("thread 0", 0)));
/// assert_eq!(alike.note().as_deref(), Some("3 threads"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    roles: Vec<Seat>,
    control: Option<usize>,
    notes: Vec<String>,
}

/// One role and its core.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Seat {
    role: String,
    cpu: usize,
}

impl Placement {
    /// A producer and a consumer.
    pub fn pair(producer: usize, consumer: usize) -> Placement {
        Placement {
            roles: vec![
                Seat {
                    role: "producer".into(),
                    cpu: producer,
                },
                Seat {
                    role: "consumer".into(),
                    cpu: consumer,
                },
            ],
            control: None,
            notes: Vec::new(),
        }
    }

    /// Threads that are alike, thread `i` on `cores[i]`, named as
    /// [`THREAD_NAMES`](super::flags::THREAD_NAMES) names them.
    pub fn alike(cores: &[usize]) -> Placement {
        let names = super::flags::THREAD_NAMES;
        Placement {
            roles: cores
                .iter()
                .zip(names)
                .map(|(&cpu, role)| Seat {
                    role: role.into(),
                    cpu,
                })
                .collect(),
            control: None,
            notes: Vec::new(),
        }
    }

    /// Adds a role on `cpu`, after the others.
    pub fn with(mut self, role: &str, cpu: usize) -> Placement {
        self.roles.push(Seat {
            role: role.into(),
            cpu,
        });
        self
    }

    /// Gives the runner's control thread a core of its own (or none).
    pub fn with_control(mut self, control: Option<usize>) -> Placement {
        self.control = control;
        self
    }

    /// Adds a word on the placement (what had to share a core, a default chosen).
    pub fn noted(mut self, note: impl Into<String>) -> Placement {
        self.notes.push(note.into());
        self
    }

    /// Adds every word of `notes`.
    pub fn noted_all(mut self, notes: impl IntoIterator<Item = String>) -> Placement {
        self.notes.extend(notes);
        self
    }

    /// The first role's core: the producer's, or the first thread's.
    pub fn producer(&self) -> usize {
        self.first()
    }

    /// The first thread's core, where an experiment of threads that are alike runs its
    /// one-thread parts (the producer's, in a pair).
    pub fn first(&self) -> usize {
        self.roles.first().map_or(0, |s| s.cpu)
    }

    /// The second role's core: the consumer's, or the second thread's (the first's when
    /// there is one thread).
    pub fn consumer(&self) -> usize {
        self.roles.get(1).map_or(self.first(), |s| s.cpu)
    }

    /// The control thread's core, if it has one of its own.
    pub fn control(&self) -> Option<usize> {
        self.control
    }

    /// The cores of every role named `role`, in order.
    pub fn cores_of(&self, role: &str) -> Vec<usize> {
        self.roles
            .iter()
            .filter(|s| s.role == role)
            .map(|s| s.cpu)
            .collect()
    }

    /// Every role's core, in order.
    pub fn threads(&self) -> Vec<usize> {
        self.roles.iter().map(|s| s.cpu).collect()
    }

    /// Every role and its core, in order.
    pub fn roles(&self) -> impl Iterator<Item = (&str, usize)> {
        self.roles.iter().map(|s| (s.role.as_str(), s.cpu))
    }

    /// The words on the placement, joined, if any.
    pub fn note(&self) -> Option<String> {
        let notes: Vec<&str> = self.notes.iter().map(|n| n.trim_end_matches('.')).collect();
        (!notes.is_empty()).then(|| notes.join("; "))
    }
}

/// Parses `--pin` (`P,C[,M...]`): CPU numbers separated by commas, each once.
///
/// ```
/// use runner::lab::pin::parse_pins;
/// assert_eq!(parse_pins("4,5,6").unwrap(), vec![4, 5, 6]);
/// assert!(parse_pins("4,4").unwrap_err().to_string().contains("twice"));
/// ```
pub fn parse_pins(s: &str) -> Result<Vec<usize>> {
    let mut out: Vec<usize> = Vec::new();
    if s.trim().is_empty() {
        return Err(Error::Usage(
            "--pin: empty pin list (expected e.g. --pin 0,1)".into(),
        ));
    }
    for part in s.split(',') {
        let p = part.trim();
        let cpu = p
            .parse::<usize>()
            .map_err(|_| Error::Usage(format!("--pin {s}: {p:?} is not a CPU number")))?;
        if out.contains(&cpu) {
            return Err(Error::Usage(format!(
                "--pin {s}: core {cpu} is named twice"
            )));
        }
        out.push(cpu);
    }
    Ok(out)
}

/// Checks a pin list against the roles it must fill and the CPUs this process may
/// use. The error names the cores that are missing and the ones that exist.
///
/// ```
/// use runner::lab::{pin::validate, topology::Topology};
/// let t = Topology { online: vec![0, 1], allowed: vec![0, 1], l3_groups: vec![], nodes: vec![] };
/// let e = validate(&[4, 5, 6], &["producer", "consumer"], 3, &t).unwrap_err().to_string();
/// assert!(e.contains("4, 5 and 6") && e.contains("0-1"), "{e}");
/// ```
pub fn validate(pins: &[usize], roles: &[&str], max: usize, topo: &Topology) -> Result<()> {
    let list = pins
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let missing: Vec<usize> = pins
        .iter()
        .copied()
        .filter(|c| !topo.allowed.contains(c))
        .collect();
    if !missing.is_empty() {
        let (what, verb) = if missing.len() == 1 {
            ("core", "is")
        } else {
            ("cores", "are")
        };
        let names = super::fmt::and_list(&missing);
        let online = if topo.online.len() > topo.allowed.len() {
            format!(" (online: {})", format_cpu_list(&topo.online))
        } else {
            String::new()
        };
        return Err(Error::Usage(format!(
            "--pin {list}: {what} {names} {verb} not available; this process may run on \
             cores {} ({} in all){online}",
            format_cpu_list(&topo.allowed),
            topo.allowed.len()
        )));
    }
    if pins.len() < roles.len() || pins.len() > max {
        return Err(Error::Usage(format!(
            "--pin {list}: expected {} to {max} cores ({}{})",
            roles.len(),
            roles.join(", "),
            if max > roles.len() {
                ", then the runner's control thread"
            } else {
                ""
            }
        )));
    }
    Ok(())
}

/// Default pins for `roles` measured threads plus the control thread, adapted to the
/// machine: the measured threads on distinct allowed cores, sharing an L3 when an
/// L3 group has room, and the control thread on a core of its own when one is left.
/// Returns the pins (the control thread's last, when it has one) and a note saying
/// what had to share. Errors when there are fewer allowed cores than measured roles.
///
/// ```
/// use runner::lab::{pin::default_pins, topology::Topology};
/// let t = Topology { online: vec![0, 1], allowed: vec![0, 1], l3_groups: vec![vec![0, 1]], nodes: vec![] };
/// let (pins, note) = default_pins(2, &t).unwrap();
/// assert_eq!(pins, vec![0, 1]);
/// assert!(note.unwrap().contains("shares"));
/// ```
pub fn default_pins(roles: usize, topo: &Topology) -> Result<(Vec<usize>, Option<String>)> {
    let allowed = &topo.allowed;
    if allowed.len() < roles {
        return Err(Error::Unsupported(format!(
            "this experiment needs {roles} cores for its measured threads; this process may \
             run on {} (cores {})",
            allowed.len(),
            format_cpu_list(allowed)
        )));
    }
    // Prefer an L3 group with room for every measured thread; skip core 0 when the
    // machine is big enough (it takes most interrupts).
    let skip0 = allowed.len() > roles + 1;
    let usable = |c: &usize| allowed.contains(c) && !(skip0 && *c == 0);
    let mut chosen: Vec<usize> = topo
        .l3_groups
        .iter()
        .map(|g| g.iter().copied().filter(usable).collect::<Vec<_>>())
        .find(|g| g.len() >= roles)
        .map(|g| g[..roles].to_vec())
        .unwrap_or_else(|| allowed.iter().copied().filter(usable).take(roles).collect());
    if chosen.len() < roles {
        chosen = allowed[..roles].to_vec();
    }
    let spare = allowed.iter().copied().find(|c| !chosen.contains(c));
    let note = match spare {
        Some(c) => {
            chosen.push(c);
            None
        }
        None => Some(format!(
            "{} cores: the control thread is not pinned and shares a core with the measured \
             threads (it sleeps while they run)",
            allowed.len()
        )),
    };
    Ok((chosen, note))
}

/// The CPU the calling thread runs on right now: `TSC_AUX` from `rdtscp` on x86_64,
/// else `/proc/thread-self/stat`.
pub fn current_cpu() -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if handoff_clock::tsc::has_rdtscp() {
        let (_, aux) = handoff_clock::tsc::rdtscp();
        return Some(handoff_clock::tsc::cpu_of(aux) as usize);
    }
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Field 39 (processor), counted after the parenthesised command name.
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(36)?.parse().ok()
}

/// Pins the calling thread to `cpu` and checks that it now runs there.
pub fn pin_current(cpu: usize) -> Result<()> {
    // core_affinity indexes a fixed 1024-bit `cpu_set_t` and panics past it.
    const CPU_SETSIZE: usize = 1024;
    if cpu >= CPU_SETSIZE {
        return Err(Error::Run(format!(
            "could not pin a thread to core {cpu}: core numbers end at {}",
            CPU_SETSIZE - 1
        )));
    }
    if !core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
        return Err(Error::Run(format!("could not pin a thread to core {cpu}")));
    }
    std::thread::yield_now();
    match current_cpu() {
        Some(c) if c != cpu => Err(Error::Run(format!(
            "a thread pinned to core {cpu} runs on core {c}: pinning is not honoured"
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(allowed: &[usize], l3: &[&[usize]]) -> Topology {
        Topology {
            online: allowed.to_vec(),
            allowed: allowed.to_vec(),
            l3_groups: l3.iter().map(|g| g.to_vec()).collect(),
            nodes: vec![],
        }
    }

    #[test]
    fn pin_lists_parse() {
        assert_eq!(parse_pins("0,1").unwrap(), vec![0, 1]);
        assert_eq!(parse_pins(" 3 , 2 ").unwrap(), vec![3, 2]);
        for bad in ["", "a,b", "1,,2", "-1,2", "1.5,2", "1;2"] {
            assert!(parse_pins(bad).is_err(), "{bad:?} should be refused");
        }
        assert!(parse_pins("2,3,2")
            .unwrap_err()
            .to_string()
            .contains("core 2 is named twice"));
    }

    #[test]
    fn validation_names_missing_and_existing_cores() {
        let t = topo(&[0, 1], &[&[0, 1]]);
        let e = validate(&[4, 5, 6], &["producer", "consumer"], 3, &t)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--pin 4,5,6: cores 4, 5 and 6 are not available; this process may run on cores 0-1 (2 in all)"
        );
        let e = validate(&[1, 2], &["producer", "consumer"], 3, &t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("core 2 is not available"), "{e}");
        let e = validate(&[1], &["producer", "consumer"], 3, &t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected 2 to 3 cores"), "{e}");
        assert!(validate(&[1, 0], &["producer", "consumer"], 3, &t).is_ok());
    }

    #[test]
    fn validation_mentions_online_cores_outside_the_allowed_set() {
        let t = Topology {
            online: (0..8).collect(),
            allowed: vec![2, 3],
            l3_groups: vec![],
            nodes: vec![],
        };
        let e = validate(&[0, 1], &["p", "c"], 2, &t)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cores 2-3 (2 in all) (online: 0-7)"), "{e}");
    }

    #[test]
    fn defaults_adapt_to_the_machine() {
        // 2 cores: both measured, the control thread shares.
        let (p, note) = default_pins(2, &topo(&[0, 1], &[&[0, 1]])).unwrap();
        assert_eq!(p, vec![0, 1]);
        assert!(note.is_some());
        // 16 cores in two L3s of 8: measured threads share an L3 and skip core 0.
        let all: Vec<usize> = (0..16).collect();
        let (p, note) = default_pins(2, &topo(&all, &[&all[..8], &all[8..]])).unwrap();
        assert_eq!(p, vec![1, 2, 0]);
        assert!(note.is_none());
        // 3 cores, no L3 data.
        let (p, note) = default_pins(2, &topo(&[0, 1, 2], &[])).unwrap();
        assert_eq!(p, vec![0, 1, 2]);
        assert!(note.is_none());
        // An L3 group of one cpu each: fall back to any allowed cores.
        let (p, _) = default_pins(2, &topo(&[0, 1, 2, 3], &[&[0], &[1], &[2], &[3]])).unwrap();
        assert_eq!(&p[..2], &[1, 2]);
        // 1 core: refused.
        assert!(default_pins(2, &topo(&[0], &[]))
            .unwrap_err()
            .to_string()
            .contains("needs 2 cores"));
    }

    #[test]
    fn pins_on_saved_server_layouts() {
        for name in ["xeon-2s", "epyc-nps4", "many-core"] {
            let t = Topology::fixture(name);
            // The documents' `--pin 4,5,6` is valid on each.
            validate(&[4, 5, 6], &["producer", "consumer"], 3, &t).unwrap();
            // Defaults: three measured threads on distinct cores of one L3 group, not
            // core 0; the control thread on a core of its own.
            let (p, note) = default_pins(3, &t).unwrap();
            assert_eq!(p.len(), 4, "{name}: {p:?}");
            assert!(note.is_none(), "{name}");
            assert!(!p[..3].contains(&0), "{name}: {p:?}");
            assert!(
                p[1..3].iter().all(|&c| t.share_l3(p[0], c) == Some(true)),
                "{name}: {p:?}"
            );
            let mut distinct = p.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), 4, "{name}: {p:?}");
            // A core past the last one: refused, naming what exists.
            let last = *t.online.last().unwrap();
            let e = validate(&[4, 5, last + 1], &["producer", "consumer"], 3, &t)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("core {} is not available", last + 1)),
                "{e}"
            );
            assert!(e.contains(&format!("0-{last}")), "{e}");
        }
    }

    #[test]
    fn pinning_to_an_allowed_core_is_verified() {
        let t = Topology::read();
        let cpu = *t.allowed.last().unwrap();
        std::thread::spawn(move || {
            pin_current(cpu).unwrap();
            assert_eq!(current_cpu(), Some(cpu));
        })
        .join()
        .unwrap();
    }
}
