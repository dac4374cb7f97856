package org.ctorch.raw;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * Finds and opens libctorch once per process, and looks its symbols up.
 *
 * <p>Where it looks (bindings-gen/native_lookup.json): the {@code CTORCH_LIB} environment
 * variable (or the {@code ctorch.lib} system property), a library file or a directory holding
 * the SONAME, and nothing else; else a natives jar on the class path
 * ({@code org/ctorch/native/<classifier>/natives.properties}), extracted once to a cache
 * directory, and nothing else (the package's own library); else the build tree this package
 * was generated in (a development build only); else the SONAME through the system loader
 * ({@code LD_LIBRARY_PATH}, the loader cache). Nothing is ever downloaded. When none loads, the error lists every
 * place tried and why each failed.
 */
public final class NativeLibrary {
    private NativeLibrary() {}

    private static volatile SymbolLookup lookup;
    private static volatile Path loadedFrom;

    /** The address of an exported function; UnsatisfiedLinkError if the library lacks it. */
    public static MemorySegment find(String name) {
        SymbolLookup l = lookup;
        if (l == null) {
            l = load();
        }
        return l.find(name).orElseThrow(() -> new UnsatisfiedLinkError(
                "libctorch has no symbol " + name + " (loaded from " + loadedFrom + ")"));
    }

    /** Where the library was loaded from (null before the first call). */
    public static Path loadedFrom() {
        return loadedFrom;
    }

    /** A Throwable from invokeExact, rethrown unchecked (the handles' types match: only an
     * Error such as a linkage failure can come here). */
    public static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(t);
    }

    private static synchronized SymbolLookup load() {
        if (lookup != null) {
            return lookup;
        }
        List<String> tried = new ArrayList<>();
        List<Path> candidates = new ArrayList<>();
        String env = System.getProperty("ctorch.lib", System.getenv("CTORCH_LIB"));
        if (env != null && !env.isEmpty()) {
            Path p = Path.of(env);
            candidates.add((Files.isDirectory(p) ? p.resolve(ApiInfo.SONAME) : p).toAbsolutePath());
        } else {
            // A natives jar carries this package's own library: that one and nothing else
            // (bindings-gen/native_lookup.json, "own_library").
            Path jar = fromNativesJar(tried);
            if (jar != null) {
                candidates.add(jar);
            } else if (buildLib() != null) {
                candidates.add(Path.of(buildLib()));
            }
        }
        for (Path p : candidates) {
            try {
                SymbolLookup l = SymbolLookup.libraryLookup(p, Arena.global());
                loadedFrom = p;
                return lookup = l;
            } catch (IllegalArgumentException | IllegalCallerException e) {
                tried.add(p + ": " + e.getMessage());
            }
        }
        if ((env == null || env.isEmpty()) && candidates.isEmpty()) {
            for (String name : ApiInfo.LOAD_NAMES) {
                try {
                    SymbolLookup l = SymbolLookup.libraryLookup(name, Arena.global());
                    loadedFrom = Path.of(name);
                    return lookup = l;
                } catch (IllegalArgumentException e) {
                    tried.add(name + " (system loader): " + e.getMessage());
                }
            }
        }
        throw new UnsatisfiedLinkError("ctorch: cannot load " + ApiInfo.SONAME + "; tried:\n  "
                + String.join("\n  ", tried) + "\nSet CTORCH_LIB to the library file or its directory, or add the "
                + "natives jar (org.ctorch:ctorch-native-torch" + ApiInfo.TORCH_ABI + ", classifier "
                + classifier() + ") to the class path.");
    }

    /** The natives jar's classifier for this machine: linux-x86_64, linux-aarch64, ... */
    public static String classifier() {
        String os = System.getProperty("os.name").toLowerCase().startsWith("linux") ? "linux"
                : System.getProperty("os.name").toLowerCase().replace(' ', '_');
        String arch = switch (System.getProperty("os.arch")) {
            case "amd64", "x86_64" -> "x86_64";
            case "aarch64", "arm64" -> "aarch64";
            default -> System.getProperty("os.arch");
        };
        return os + "-" + arch;
    }

    /**
     * The natives jar's libraries, extracted into the cache directory
     * ({@code CTORCH_CACHE_DIR}, else {@code $XDG_CACHE_HOME/ctorch/java}, else
     * {@code ~/.cache/ctorch/java}) under a folder named by the natives' version, libtorch
     * and classifier: each file is written to a temporary name and moved into place, so two
     * processes extracting at once both see whole files. Null when no natives jar is on the
     * class path.
     */
    private static Path fromNativesJar(List<String> tried) {
        String base = "org/ctorch/native/" + classifier() + "/";
        Properties props = new Properties();
        try (InputStream in = resource(base + "natives.properties")) {
            if (in == null) {
                tried.add("natives jar: no " + base + "natives.properties on the class path");
                return null;
            }
            props.load(in);
        } catch (IOException e) {
            tried.add("natives jar: " + e);
            return null;
        }
        String cache = System.getenv("CTORCH_CACHE_DIR");
        if (cache == null || cache.isEmpty()) {
            String xdg = System.getenv("XDG_CACHE_HOME");
            cache = (xdg != null && !xdg.isEmpty() ? xdg : System.getProperty("user.home") + "/.cache") + "/ctorch/java";
        }
        Path dir = Path.of(cache, props.getProperty("id", "unknown") + "-" + classifier());
        try {
            Files.createDirectories(dir);
            for (String f : props.getProperty("files", "").split(",")) {
                if (f.isBlank()) {
                    continue;
                }
                Path dst = dir.resolve(f);
                if (Files.exists(dst)) {
                    continue;
                }
                try (InputStream in = resource(base + f)) {
                    if (in == null) {
                        throw new IOException("the natives jar lacks " + base + f);
                    }
                    Path tmp = Files.createTempFile(dir, f, ".part");
                    Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
                    Files.move(tmp, dst, StandardCopyOption.ATOMIC_MOVE);
                }
            }
            for (String[] link : links(props.getProperty("links", ""))) {
                Path l = dir.resolve(link[0]);
                if (!Files.exists(l)) {
                    try {
                        Files.createSymbolicLink(l, Path.of(link[1]));
                    } catch (java.nio.file.FileAlreadyExistsException e) {
                        // another process made it
                    }
                }
            }
        } catch (IOException e) {
            tried.add("natives jar: extracting to " + dir + ": " + e);
            return null;
        }
        return dir.resolve(props.getProperty("load", ApiInfo.SONAME));
    }

    /** The build tree's library (build.properties beside this class, written by the generator
     * in a build tree only), or null. */
    private static String buildLib() {
        try (InputStream in = NativeLibrary.class.getResourceAsStream("build.properties")) {
            if (in == null) {
                return null;
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("lib");
        } catch (IOException e) {
            return null;
        }
    }

    /** A resource of the class path or of any module (the natives jar is a plain jar: the
     * class loader finds its files, which Class.getResourceAsStream in a named module would not). */
    private static InputStream resource(String name) {
        ClassLoader cl = NativeLibrary.class.getClassLoader();
        return cl != null ? cl.getResourceAsStream(name) : ClassLoader.getSystemResourceAsStream(name);
    }

    private static List<String[]> links(String spec) {
        List<String[]> out = new ArrayList<>();
        for (String s : spec.split(",")) {
            int eq = s.indexOf('=');
            if (eq > 0) {
                out.add(new String[] {s.substring(0, eq), s.substring(eq + 1)});
            }
        }
        return out;
    }
}
