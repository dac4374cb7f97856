// Finds libctorch the way the Rust ecosystem expects: through pkg-config
// (`ctorch.pc`, installed with the library: `cmake --install`, or the
// libctorch-dev Debian package). Set PKG_CONFIG_PATH to an install prefix's
// lib/pkgconfig when it is not a system one. Never a build-tree path.
fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    match pkg_config::probe_library("ctorch") {
        Ok(lib) => {
            for p in &lib.link_paths {
                // The library directory, for dependents' build scripts (DEP_CTORCH_LIBDIR).
                println!("cargo:libdir={}", p.display());
            }
        }
        Err(e) => panic!(
            "ctorch-sys: libctorch not found by pkg-config ({e}). Install ctorch (its ctorch.pc) \
             and point PKG_CONFIG_PATH at <prefix>/lib/pkgconfig."
        ),
    }
}
