//! The environment every result carries: CPU, cores, allowed CPUs, L3 groups, pins,
//! kernel, virtualisation, compilers, git revision and the TSC calibration.

use super::noise::Probes;
use super::topology::{format_cpu_list, Topology};
use handoff_clock::{Calibration, Clock, ReadCost};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs;

/// The captured environment (the `env` object of the results JSON).
#[derive(Clone, Debug, Serialize)]
pub struct Env {
    /// `model name` from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Online CPUs.
    pub cores_online: usize,
    /// Online CPUs, kernel list form.
    pub online_cpus: String,
    /// CPUs this process may run on, kernel list form.
    pub allowed_cpus: String,
    /// L3-sharing groups, kernel list form each.
    pub l3_groups: Vec<String>,
    /// Online NUMA nodes with their CPUs, `node: list` each (`0: 0-3`); empty when
    /// sysfs has no node directory.
    pub numa_nodes: Vec<String>,
    /// Role -> core.
    pub pins: BTreeMap<String, Option<usize>>,
    /// What had to share a core, if anything.
    pub pin_note: Option<String>,
    /// `/proc/sys/kernel/osrelease`.
    pub kernel: String,
    /// Hypervisor, when one is detected.
    pub virtualization: String,
    /// CPUID's hypervisor signature (leaf `0x4000_0000`: `KVMKVMKVM`, `TCGTCGTCGTCG`,
    /// ...), when CPUID reports a hypervisor.
    pub hypervisor: Option<String>,
    /// Whether the CPUs are emulated in software (QEMU's TCG): a run there checks
    /// behaviour, and none of its timings means anything.
    pub emulated_cpus: bool,
    /// The rustc that built the runner.
    pub rustc: String,
    /// The C++ compiler that built cpp-baseline.
    pub cxx: String,
    /// Whether the Boost headers were found when cpp-baseline was built.
    pub boost: bool,
    /// Git revision of the build (`-dirty` with uncommitted changes).
    pub git_revision: String,
    /// Build profile of the runner.
    pub build_profile: String,
    /// TSC calibration.
    pub tsc: Calibration,
    /// Measured cost of one read of each kind.
    pub clock_read_cost_ns: ReadCost,
    /// What the pinned cores lose to interruptions ([`probe`](super::noise::probe)), when probed.
    pub noise: Option<Probes>,
}

/// What the runner's binary was built with besides rustc, which the lab cannot know
/// on its own (it depends on no experiment's crate): the binary says it.
#[derive(Clone, Debug, Default)]
pub struct Toolchain {
    /// The C++ compiler that built the C++ variants.
    pub cxx: String,
    /// Whether the Boost headers were found when they were built.
    pub boost: bool,
}

impl Env {
    /// Captures the environment for the given pins.
    pub fn capture(
        topo: &Topology,
        clock: &Clock,
        tools: &Toolchain,
        pins: BTreeMap<String, Option<usize>>,
        pin_note: Option<String>,
    ) -> Env {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        #[cfg(target_arch = "x86_64")]
        let hypervisor = handoff_clock::tsc::hypervisor_signature();
        #[cfg(not(target_arch = "x86_64"))]
        let hypervisor = None;
        Env {
            cpu_model: cpu_model(&cpuinfo),
            cores_online: topo.online.len(),
            online_cpus: format_cpu_list(&topo.online),
            allowed_cpus: format_cpu_list(&topo.allowed),
            l3_groups: topo.l3_groups.iter().map(|g| format_cpu_list(g)).collect(),
            numa_nodes: topo
                .nodes
                .iter()
                .map(|(n, cpus)| format!("{n}: {}", format_cpu_list(cpus)))
                .collect(),
            pins,
            pin_note,
            kernel: read_trim("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
            virtualization: virtualization(&cpuinfo, hypervisor.as_deref()),
            emulated_cpus: emulated(hypervisor.as_deref()),
            hypervisor,
            rustc: env!("RUNNER_RUSTC_VERSION").to_string(),
            cxx: tools.cxx.clone(),
            boost: tools.boost,
            git_revision: env!("RUNNER_GIT_REVISION").to_string(),
            build_profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .into(),
            tsc: clock.calibration().clone(),
            clock_read_cost_ns: clock.read_cost(),
            noise: None,
        }
    }

    /// One line for the top of the printed report.
    pub fn summary(&self) -> String {
        let clock = match self.tsc.source {
            handoff_clock::Source::Tsc => format!(
                "TSC {:.4} GHz (±{:.2} ppm)",
                self.tsc.freq_hz / 1e9,
                self.tsc.error_ppm
            ),
            handoff_clock::Source::Monotonic => "clock CLOCK_MONOTONIC (no usable TSC)".into(),
        };
        let nodes = if self.numa_nodes.len() > 1 {
            format!(" | NUMA nodes [{}]", self.numa_nodes.join("] ["))
        } else {
            String::new()
        };
        format!(
            "{} | {} cores online, allowed {} | L3 groups [{}]{nodes} | {} | kernel {} | {clock} | {}",
            self.cpu_model,
            self.cores_online,
            self.allowed_cpus,
            self.l3_groups.join("] ["),
            self.virtualization,
            self.kernel,
            self.git_revision
        )
    }
}

fn read_trim(path: &str) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// `model name` of the first processor in a `/proc/cpuinfo` text.
pub fn cpu_model(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// A short name for this machine, for its results folder: the hypervisor's kind (or
/// `metal`), the CPU's family, and the cores this process may use.
///
/// ```
/// use runner::lab::env::machine_tag;
/// let epyc = "model name\t: AMD EPYC 9B14\nflags\t\t: fpu hypervisor\n";
/// assert_eq!(machine_tag(epyc, "KVM", 2), "kvm-epyc-2core");
/// let xeon = "model name\t: Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz\nflags\t\t: fpu\n";
/// assert_eq!(machine_tag(xeon, "", 16), "metal-xeon-16core");
/// ```
pub fn machine_tag(cpuinfo: &str, dmi: &str, cores: usize) -> String {
    let hypervisor = cpuinfo
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    let dmi = dmi.to_lowercase();
    let virt = if !hypervisor {
        "metal"
    } else if dmi.contains("kvm") || dmi.contains("qemu") || dmi.contains("google") {
        "kvm"
    } else if dmi.contains("vmware") {
        "vmware"
    } else if dmi.contains("microsoft") {
        "hyperv"
    } else if dmi.contains("xen") {
        "xen"
    } else {
        "vm"
    };
    let model = cpu_model(cpuinfo).to_lowercase();
    let words: Vec<String> = model
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    let known = [
        "epyc",
        "ryzen",
        "threadripper",
        "xeon",
        "core",
        "atom",
        "neoverse",
    ];
    let family = known
        .iter()
        .find(|k| words.iter().any(|w| w == *k))
        .map(|k| k.to_string())
        .or_else(|| {
            words
                .iter()
                .find(|w| !["amd", "intel", "r", "tm", "cpu", "processor"].contains(&w.as_str()))
                .cloned()
        })
        .unwrap_or_else(|| "cpu".into());
    format!("{virt}-{family}-{cores}core")
}

/// This machine's [`machine_tag`].
pub fn this_machine_tag(topo: &Topology) -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let dmi: Vec<String> = ["sys_vendor", "product_name"]
        .iter()
        .filter_map(|f| read_trim(&format!("/sys/class/dmi/id/{f}")))
        .collect();
    let tag = machine_tag(&cpuinfo, &dmi.join(" "), topo.allowed.len());
    #[cfg(target_arch = "x86_64")]
    let signature = handoff_clock::tsc::hypervisor_signature();
    #[cfg(not(target_arch = "x86_64"))]
    let signature: Option<String> = None;
    if emulated(signature.as_deref()) {
        // `emulated-qemu-8core`: results from emulated CPUs never sit beside a real
        // machine's under one name.
        format!(
            "emulated-{}",
            tag.split_once('-').map_or(tag.as_str(), |(_, rest)| rest)
        )
    } else {
        tag
    }
}

/// The hypervisor, from the cpuinfo `hypervisor` flag and the DMI product strings.
pub fn virtualization(cpuinfo: &str, signature: Option<&str>) -> String {
    let flagged = signature.is_some()
        || cpuinfo
            .lines()
            .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    let mut what = match signature {
        Some(s) => format!("hypervisor present: {}", hypervisor_name(s)),
        None => "hypervisor present".to_string(),
    };
    if emulated(signature) {
        what.push_str(", emulated CPUs");
    }
    let dmi: Vec<String> = ["sys_vendor", "product_name"]
        .iter()
        .filter_map(|f| read_trim(&format!("/sys/class/dmi/id/{f}")))
        .collect();
    match (flagged, dmi.is_empty()) {
        (false, _) => "none detected (bare metal?)".into(),
        (true, true) => what,
        (true, false) => format!("{what} ({})", dmi.join(" ")),
    }
}

/// The hypervisor a CPUID signature names, or the signature itself.
pub fn hypervisor_name(signature: &str) -> &str {
    match signature {
        "KVMKVMKVM" => "KVM",
        "TCGTCGTCGTCG" => "QEMU TCG",
        "XenVMMXenVMM" => "Xen",
        "Microsoft Hv" => "Hyper-V",
        "VMwareVMware" => "VMware",
        "VBoxVBoxVBox" => "VirtualBox",
        "bhyve bhyve " => "bhyve",
        other => other,
    }
}

/// Whether a CPUID hypervisor signature means the CPUs are emulated in software: QEMU's
/// TCG translates every instruction, so its timings are the translator's, and its CPUs
/// share whatever real cores run QEMU.
pub fn emulated(signature: Option<&str>) -> bool {
    signature == Some("TCGTCGTCGTCG")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_fields() {
        let ci =
            "processor\t: 0\nmodel name\t: AMD EPYC 9B14\nflags\t\t: fpu sse hypervisor rdtscp\n";
        assert_eq!(cpu_model(ci), "AMD EPYC 9B14");
        assert!(virtualization(ci, None).starts_with("hypervisor present"));
        assert_eq!(cpu_model(""), "unknown");
        assert!(virtualization("flags : fpu sse\n", None).starts_with("none detected"));
    }

    #[test]
    fn hypervisor_signatures() {
        let kvm = virtualization("flags : fpu hypervisor\n", Some("KVMKVMKVM"));
        assert!(kvm.starts_with("hypervisor present: KVM"), "{kvm}");
        assert!(!kvm.contains("emulated"), "{kvm}");
        // QEMU without KVM may not set the flag in /proc/cpuinfo's copy: CPUID decides.
        let tcg = virtualization("flags : fpu\n", Some("TCGTCGTCGTCG"));
        assert!(
            tcg.starts_with("hypervisor present: QEMU TCG, emulated CPUs"),
            "{tcg}"
        );
        assert!(emulated(Some("TCGTCGTCGTCG")));
        assert!(!emulated(Some("KVMKVMKVM")) && !emulated(None));
        assert_eq!(hypervisor_name("Microsoft Hv"), "Hyper-V");
        assert_eq!(hypervisor_name("unknown vmm"), "unknown vmm");
    }

    #[test]
    fn capture_fills_every_field() {
        let topo = Topology::read();
        let clock = Clock::quick();
        let mut pins = BTreeMap::new();
        pins.insert("producer".to_string(), Some(0));
        let tools = Toolchain {
            cxx: "c++ (test) 1.0".into(),
            boost: false,
        };
        let e = Env::capture(&topo, &clock, &tools, pins, None);
        assert!(e.cores_online >= 1 && !e.allowed_cpus.is_empty());
        assert!(e.rustc.starts_with("rustc "));
        assert!(!e.git_revision.is_empty() && !e.cxx.is_empty());
        let json = serde_json::to_value(&e).unwrap();
        for key in [
            "cpu_model",
            "allowed_cpus",
            "l3_groups",
            "pins",
            "kernel",
            "virtualization",
            "hypervisor",
            "emulated_cpus",
            "rustc",
            "cxx",
            "git_revision",
            "tsc",
        ] {
            assert!(json.get(key).is_some(), "env lacks {key}");
        }
        assert!(json["tsc"]["freq_hz"].as_f64().unwrap() > 0.0);
    }
}
