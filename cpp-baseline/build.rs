//! Compiles the C++ variants with `cc` (-O3, C++17). Probes for the Boost lockfree
//! headers first: without them the crate still builds and the Boost variant reports
//! itself unavailable. `HANDOFF_CPP_NO_BOOST=1` forces that path (to test it).

use std::{env, fs, path::PathBuf, process::Command};

fn main() {
    println!("cargo:rerun-if-changed=cpp");
    println!("cargo:rerun-if-env-changed=HANDOFF_CPP_NO_BOOST");
    println!("cargo:rerun-if-env-changed=CXX");
    println!("cargo:rerun-if-env-changed=CPATH");
    println!("cargo:rerun-if-env-changed=CPLUS_INCLUDE_PATH");
    println!("cargo:rustc-check-cfg=cfg(have_boost)");
    println!("cargo:rustc-check-cfg=cfg(have_cpp)");

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("x86_64") {
        // The hot loops stamp with rdtscp; other targets get no C++ variants.
        println!("cargo:rustc-env=HB_CXX_VERSION=not built (the C++ variants need x86_64)");
        return;
    }

    let compiler = base().get_compiler();
    let version = Command::new(compiler.path())
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_else(|| compiler.path().display().to_string());
    println!("cargo:rustc-env=HB_CXX_VERSION={version}");

    let no_boost = env::var_os("HANDOFF_CPP_NO_BOOST").is_some_and(|v| v != "0");
    let have_boost = !no_boost && {
        let probe = out.join("boost_probe.cpp");
        fs::write(
            &probe,
            "#include <boost/lockfree/spsc_queue.hpp>\n\
             boost::lockfree::spsc_queue<int, boost::lockfree::capacity<4>> hb_probe_q;\n",
        )
        .expect("write the Boost probe into OUT_DIR");
        base()
            .file(&probe)
            .cargo_metadata(false)
            .warnings(false)
            .try_compile("hb_boost_probe")
            .is_ok()
    };
    watch_boost_header(have_boost);
    if have_boost {
        println!("cargo:rustc-cfg=have_boost");
    } else {
        println!(
            "cargo:warning=Boost lockfree headers not found: the boost-spsc variant will be \
             unavailable (install libboost-dev)"
        );
    }

    let mut build = base();
    build.file("cpp/baseline.cpp");
    if have_boost {
        build.define("HB_HAVE_BOOST", None);
    }
    build.compile("hb_cpp_baseline");
    println!("cargo:rustc-cfg=have_cpp");
}

/// Makes cargo rerun this script when the Boost header appears, goes or changes, so that
/// `apt-get install libboost-dev` on a machine that already built the crate turns the
/// variant on at the next build (without it the probe's answer was cached until a clean
/// build). Where the header is missing, the folders it would be added to are watched.
fn watch_boost_header(have_boost: bool) {
    const HEADER: &str = "boost/lockfree/spsc_queue.hpp";
    let mut dirs: Vec<PathBuf> = ["CPATH", "CPLUS_INCLUDE_PATH"]
        .iter()
        .filter_map(env::var_os)
        .flat_map(|v| env::split_paths(&v).collect::<Vec<_>>())
        .collect();
    dirs.extend(["/usr/local/include", "/usr/include"].map(PathBuf::from));
    let found: Vec<PathBuf> = dirs
        .iter()
        .map(|d| d.join(HEADER))
        .filter(|p| p.exists())
        .collect();
    if have_boost {
        // Watch the header where we know it (if the compiler found it elsewhere, through
        // flags of its own, there is nothing to watch).
        for p in found {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    } else {
        // Watch the deepest folder on the header's way that exists in each include
        // folder (`/usr/include` where Boost is absent): installing the header adds an
        // entry there, which changes its mtime. A missing path would make cargo rerun
        // the script, and rebuild this crate and the runner, on every build.
        for d in dirs.iter().filter(|d| d.is_dir()) {
            let deepest = d
                .join(HEADER)
                .ancestors()
                .find(|a| a.is_dir())
                .map(PathBuf::from)
                .unwrap_or_else(|| d.clone());
            println!("cargo:rerun-if-changed={}", deepest.display());
        }
    }
}

fn base() -> cc::Build {
    let mut b = cc::Build::new();
    b.cpp(true)
        .std("c++17")
        .opt_level(3)
        .flag_if_supported("-fno-fast-math")
        .warnings(true);
    b
}
