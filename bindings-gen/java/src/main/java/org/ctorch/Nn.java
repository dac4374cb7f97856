package org.ctorch;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.ctorch.raw.RawApi;

/**
 * torch.nn's modules by kind and constructor text, as {@code ctorch_nn_new} takes them:
 * {@code Nn.module("Conv2d", "1, 6, 5, padding=2")}. The typed builders of every kind are in
 * {@link org.ctorch.nn} ({@code new Conv2d(1, 6, 5).padding(2).build()}, {@code Sequential}).
 */
public final class Nn {
    private Nn() {}

    /** {@code torch.nn.<kind>(<args>)}: args is the constructor's Python argument text. */
    public static NnModule module(String kind, String args) {
        return CApi.nnNew(kind, args);
    }

    /**
     * {@code torch.nn.<kind>(<args>, name=module, ...)}: a constructor that takes modules
     * (TransformerEncoder's encoder_layer) gets them by handle, names[i] naming modules[i].
     */
    public static NnModule module(String kind, String args, String[] names, NnModule[] modules) {
        if (names.length != modules.length) {
            throw new IllegalArgumentException("Nn.module: " + names.length + " names for " + modules.length + " modules");
        }
        Scratch s = Scratch.get();
        long m = s.mark();
        try {
            MemorySegment out = s.allocate(ValueLayout.ADDRESS);
            MemorySegment ns = s.allocate(ValueLayout.ADDRESS, Math.max(1, names.length));
            for (int i = 0; i < names.length; i++) {
                ns.setAtIndex(ValueLayout.ADDRESS, i, Conv.str(s, names[i], "ctorch_nn_new_with_modules", "names"));
            }
            MemorySegment hs = s.allocate(ValueLayout.ADDRESS, Math.max(1, modules.length));
            int used = 0;
            try {
                for (; used < modules.length; used++) {
                    hs.setAtIndex(ValueLayout.ADDRESS, used, Handle.use(modules[used], "ctorch_nn_new_with_modules",
                            "modules"));
                }
                Native.check(RawApi.nn_new_with_modules(out, Conv.str(s, kind, "ctorch_nn_new_with_modules", "kind"),
                        Conv.str(s, args, "ctorch_nn_new_with_modules", "args"), ns, hs, modules.length));
            } finally {
                for (int i = 0; i < used; i++) {
                    modules[i].done();
                }
            }
            return NnModule.own(out.get(ValueLayout.ADDRESS, 0));
        } finally {
            s.reset(m);
        }
    }

    /**
     * A module whose forward is Java (torch.nn.Module subclassed): forward gets the inputs (null
     * = None) and returns the outputs. An exception it throws fails the module's call with a
     * CTorchException (status RUNTIME) whose cause is that exception; it never reaches C.
     */
    public static NnModule custom(String typeName, java.util.function.Function<Tensor[], Tensor[]> forward) {
        return Upcalls.custom(typeName, forward);
    }

    /** Saves the module's state dict to path in torch.save's format (torch.load reads it). */
    public static void save(NnModule m, String path) {
        try (TensorDict sd = m.stateDict()) {
            CApi.tensorDictSave(path, sd);
        }
    }

    /** Loads a state dict saved by save() or torch.save(model.state_dict()) into m (strict). */
    public static void load(NnModule m, String path) {
        try (TensorDict sd = CApi.loadDict(path)) {
            m.loadStateDict(sd, true);
        }
    }
}
