// Command ctorch-setup gives this module the libctorch its cgo code links,
// once per machine, as the one step before `go build` (Go runs no build step
// of a dependency; docs/packages.md). In a module that requires
// github.com/ctorch/ctorch-go:
//
//	go run github.com/ctorch/ctorch-go/cmd/ctorch-setup
//	go build
//
// It looks in the order docs/packages.md gives: CTORCH_LIB, then pkg-config's
// ctorch of this module's version (then there is nothing to do); else it
// builds ctorch from the sources the module carries (native/src) against the
// libtorch it finds (LIBTORCH or CTORCH_TORCH, the active Python
// environment's torch, the system's), into the user's cache folder
// (os.UserCacheDir()/ctorch/go-VERSION), printing what it found and what is
// missing. For a library outside pkg-config's own folders it writes a
// ctorch.pc there (with a run path, so programs run without LD_LIBRARY_PATH)
// and points `go env PKG_CONFIG` at a pkg-config that reads it, so that
// `#cgo pkg-config: ctorch` finds it in every later `go build`.
// It needs Python 3 (the build's driver and generator), a C++ compiler and
// CMake only when it builds.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

const module = "github.com/ctorch/ctorch-go"

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "ctorch-setup: "+format+"\n", a...)
	os.Exit(1)
}

type found struct {
	How          string `json:"how"`
	LibDir       string `json:"libdir"`
	IncludeDir   string `json:"includedir"`
	TorchVersion string `json:"torch_version"`
}

func main() {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", module).Output()
	if err != nil {
		fail("go list -m %s: %v (run this in a module that requires it)", module, err)
	}
	f := strings.Fields(string(out))
	if len(f) < 1 {
		fail("go list -m %s printed nothing", module)
	}
	dir := f[0]
	gen, err := os.ReadFile(filepath.Join(dir, "enums_gen.go"))
	if err != nil {
		fail("%v", err)
	}
	version := regexp.MustCompile(`const Version = "([^"]+)"`).FindSubmatch(gen)
	torch := regexp.MustCompile(`const LibtorchVersion = "([^"]+)"`).FindSubmatch(gen)
	if version == nil || torch == nil {
		fail("%s/enums_gen.go names no Version or LibtorchVersion", dir)
	}
	v, tv := string(version[1]), string(torch[1])
	src := filepath.Join(dir, "native", "src")
	cache, err := os.UserCacheDir()
	if err != nil {
		fail("%v", err)
	}
	prefix := filepath.Join(cache, "ctorch", "go-"+v)
	// The module cache is read-only and the build writes beside its
	// sources: a copy in the cache folder.
	work := filepath.Join(prefix, "src")
	if _, err := os.Stat(filepath.Join(work, "CMakeLists.txt")); err != nil {
		if _, err := os.Stat(filepath.Join(src, "CMakeLists.txt")); err != nil {
			fail("this module carries no sources (%s) and no libctorch was found", src)
		}
		if err := os.MkdirAll(prefix, 0o755); err != nil {
			fail("%v", err)
		}
		if b, err := exec.Command("cp", "-r", src, work).CombinedOutput(); err != nil {
			fail("copying the sources: %v %s", err, b)
		}
		exec.Command("chmod", "-R", "u+w", work).Run()
	}
	python := os.Getenv("PYTHON")
	if python == "" {
		python = "python3"
	}
	cmd := exec.Command(python, filepath.Join(work, "bindings-gen", "ctorch_native.py"), "ensure",
		"--source", work, "--prefix", prefix, "--version", v)
	cmd.Stderr = os.Stderr
	res, err := cmd.Output()
	if err != nil {
		fail("no libctorch (above: what was found and what is missing): %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(res)), "\n")
	var lib found
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &lib); err != nil {
		fail("reading ctorch_native.py's answer: %v", err)
	}
	if lib.TorchVersion != "" && lib.TorchVersion != tv {
		fail("the libctorch found (%s) is built for libtorch %s; this module version is generated for libtorch %s: "+
			"use the module version generated for it, or point LIBTORCH/CTORCH_TORCH at libtorch %s", lib.LibDir,
			lib.TorchVersion, tv, tv)
	}
	if lib.How == "pkg-config" {
		fmt.Printf("ctorch-setup: pkg-config finds libctorch %s in %s: nothing to do\n", v, lib.LibDir)
		return
	}
	pcdir := filepath.Join(prefix, "go-pkgconfig")
	if err := os.MkdirAll(pcdir, 0o755); err != nil {
		fail("%v", err)
	}
	pc := fmt.Sprintf("Name: ctorch\nDescription: libctorch for %s (cmd/ctorch-setup)\nVersion: %s\n"+
		"Libs: -L%s -Wl,-rpath,%s -lctorch\nCflags: -I%s\n", module, v, lib.LibDir, lib.LibDir, lib.IncludeDir)
	if err := os.WriteFile(filepath.Join(pcdir, "ctorch.pc"), []byte(pc), 0o644); err != nil {
		fail("%v", err)
	}
	real, err := exec.LookPath("pkg-config")
	if err != nil {
		fail("pkg-config is not installed (cgo reads ctorch's flags from it: apt-get install pkg-config)")
	}
	wrapper := filepath.Join(prefix, "pkg-config")
	script := fmt.Sprintf("#!/bin/sh\n# Written by ctorch-setup: ctorch's .pc first, then the usual search.\n"+
		"PKG_CONFIG_PATH=%s${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH} exec %s \"$@\"\n", pcdir, real)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		fail("%v", err)
	}
	if b, err := exec.Command("go", "env", "-w", "PKG_CONFIG="+wrapper).CombinedOutput(); err != nil {
		fail("go env -w PKG_CONFIG: %v %s", err, b)
	}
	fmt.Printf("ctorch-setup: libctorch %s (%s) in %s; go env PKG_CONFIG=%s: `go build` finds it\n",
		v, lib.How, lib.LibDir, wrapper)
}
