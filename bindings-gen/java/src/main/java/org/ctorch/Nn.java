package org.ctorch;

/**
 * torch.nn's modules by kind and constructor text, as {@code ctorch_nn_new} takes them:
 * {@code Nn.module("Conv2d", "1, 6, 5, padding=2")}; {@link #sequential(String[][])} names its
 * children, so the state-dict keys are torch's ({@code conv1.weight}).
 */
public final class Nn {
    private Nn() {}

    /** {@code torch.nn.<kind>(<args>)}: args is the constructor's Python argument text. */
    public static NnModule module(String kind, String args) {
        return CApi.nnNew(kind, args);
    }

    /**
     * {@code torch.nn.Sequential(OrderedDict(...))} from rows {name, kind, constructor text}:
     * each child made in order (the order of the random draws) and registered under its name.
     */
    public static NnModule sequential(String[][] layers) {
        NnModule net = CApi.nnNew("Sequential", "");
        for (String[] l : layers) {
            if (l.length != 3) {
                throw new IllegalArgumentException("Nn.sequential: a layer is {name, kind, args}, got " + l.length + " strings");
            }
            try (NnModule child = CApi.nnNew(l[1], l[2])) {
                net.registerModule(l[0], child);
            }
        }
        return net;
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
