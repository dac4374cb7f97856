// Finds libctorch in the order docs/packages.md gives, as -sys crates do:
//   1. CTORCH_LIB, the path of a libctorch.so;
//   2. pkg-config's ctorch (ctorch.pc from `cmake --install` or the
//      libctorch-dev Debian package) of this crate's version;
//   3. else, where this crate carries ctorch's sources (native/src, as the
//      packaged crate does), builds them into OUT_DIR against the libtorch it
//      finds (LIBTORCH or CTORCH_TORCH, the active Python environment's torch,
//      the system's), through native/src/bindings-gen/ctorch_native.py, which
//      prints what it found and what is missing.
// `cargo run` and `cargo test` find a library built into OUT_DIR by
// themselves (cargo puts OUT_DIR's link folders on the loader's path); a
// program run on its own needs LD_LIBRARY_PATH, which the build prints.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn link(libdir: &Path) {
    println!("cargo:rustc-link-search=native={}", libdir.display());
    println!("cargo:rustc-link-lib=dylib=ctorch");
    // The library directory, for dependents' build scripts (DEP_CTORCH_LIBDIR).
    println!("cargo:libdir={}", libdir.display());
}

fn main() {
    for v in ["CTORCH_LIB", "PKG_CONFIG_PATH", "LIBTORCH", "CTORCH_TORCH", "VIRTUAL_ENV", "CONDA_PREFIX"] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    if let Ok(lib) = env::var("CTORCH_LIB") {
        let lib = PathBuf::from(lib);
        match lib.parent() {
            Some(dir) if lib.is_file() => return link(dir),
            _ => panic!("ctorch-sys: CTORCH_LIB={} is not a file", lib.display()),
        }
    }
    let version = env::var("CARGO_PKG_VERSION").unwrap();
    let src = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("native").join("src");
    let carried = src.join("CMakeLists.txt").is_file();
    let mut pc = pkg_config::Config::new();
    pc.cargo_metadata(false);
    if carried {
        // Another version installed is passed over only where there is
        // something else to use (without sources, the load check judges it).
        pc.exactly_version(&version);
    }
    match pc.probe("ctorch") {
        Ok(lib) => {
            for p in &lib.link_paths {
                link(p);
            }
            return;
        }
        Err(e) => println!("cargo:warning=ctorch-sys: pkg-config finds no ctorch {version} ({e})"),
    }
    if !carried {
        panic!(
            "ctorch-sys: no libctorch: CTORCH_LIB is unset, pkg-config finds no ctorch {version} (point \
             PKG_CONFIG_PATH at <prefix>/lib/pkgconfig of an installed ctorch), and this crate carries no \
             sources to build one (docs/packages.md)"
        );
    }
    // The build writes into its sources' folder (build-native/): a copy in
    // OUT_DIR, as a registry's sources are not to be written to.
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let copy = out.join("src");
    if !copy.join("CMakeLists.txt").is_file() {
        let st = Command::new("cp").arg("-r").arg(&src).arg(&copy).status().expect("ctorch-sys: cp");
        assert!(st.success(), "ctorch-sys: could not copy the sources into {}", out.display());
    }
    let python = env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let res = Command::new(&python)
        .arg(copy.join("bindings-gen").join("ctorch_native.py"))
        .args(["ensure", "--source"])
        .arg(&copy)
        .arg("--prefix")
        .arg(out.join("native"))
        .args(["--version", &version])
        .output()
        .unwrap_or_else(|e| panic!("ctorch-sys: cannot run {python} (the build of libctorch needs Python 3): {e}"));
    let log = String::from_utf8_lossy(&res.stderr);
    for line in log.lines().filter(|l| l.starts_with("ctorch:")) {
        println!("cargo:warning={line}");
    }
    if !res.status.success() {
        panic!("ctorch-sys: no libctorch, and building it failed:\n{log}");
    }
    let found = String::from_utf8_lossy(&res.stdout);
    let field = |key: &str| -> Option<String> {
        let line = found.lines().last()?;
        Some(line.split(&format!("\"{key}\": \"")).nth(1)?.split('"').next()?.to_string())
    };
    let libdir = field("libdir").expect("ctorch-sys: ctorch_native.py printed no libdir");
    // The declarations in src/lib.rs follow one libtorch's schemas: a library
    // for another is refused here, not at the first call.
    let lib_rs = std::fs::read_to_string(PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("src/lib.rs"))
        .unwrap_or_default();
    let ours = lib_rs.split("pub const TORCH_VERSION: &str = \"").nth(1).and_then(|s| s.split('"').next());
    if let (Some(theirs), Some(ours)) = (field("torch_version"), ours) {
        if theirs != ours {
            panic!(
                "ctorch-sys: the libctorch in {libdir} is built for libtorch {theirs}; this crate version is \
                 generated for libtorch {ours}: point LIBTORCH or CTORCH_TORCH at libtorch {ours}, or use the \
                 crate version generated for {theirs}"
            );
        }
    }
    println!("cargo:warning=ctorch-sys: libctorch in {libdir} (a program run outside cargo needs LD_LIBRARY_PATH={libdir})");
    link(Path::new(&libdir));
}
