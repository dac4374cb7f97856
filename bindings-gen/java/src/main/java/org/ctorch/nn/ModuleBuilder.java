package org.ctorch.nn;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.ctorch.Nn;
import org.ctorch.NnModule;

/**
 * What the generated builders of torch.nn's kinds ({@link Linear}, {@link Conv2d}, ...) share:
 * the arguments set so far, as the keyword text ctorch_nn_new parses ({@link #argsText()}), and
 * {@link #build()}. A builder may build several modules (each with its own parameters, drawn from
 * the generator when built).
 */
public abstract class ModuleBuilder {
    private final String kind;
    private final Map<String, String> args = new LinkedHashMap<>();
    private final List<String> moduleNames = new ArrayList<>();
    private final List<NnModule> modules = new ArrayList<>();

    ModuleBuilder(String kind) {
        this.kind = kind;
    }

    /** torch.nn's class name ("Conv2d"). */
    public final String kind() {
        return kind;
    }

    final void set(String name, String literal) {
        args.put(name, literal); // set again: the last value counts
    }

    final void module(String name, NnModule m) {
        int i = moduleNames.indexOf(name);
        if (i >= 0) {
            moduleNames.remove(i);
            modules.remove(i);
        }
        if (m != null) {
            moduleNames.add(name);
            modules.add(m);
        }
    }

    /** The constructor's argument text these settings make, keywords in the order set ({@code in_features=256, ...}). */
    public final String argsText() {
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, String> e : args.entrySet()) {
            b.append(b.length() > 0 ? ", " : "").append(e.getKey()).append('=').append(e.getValue());
        }
        return b.toString();
    }

    /** Makes the module (ctorch_nn_new; ctorch_nn_new_with_modules when a module-valued argument is set). */
    public final NnModule build() {
        if (modules.isEmpty()) {
            return Nn.module(kind, argsText());
        }
        return Nn.module(kind, argsText(), moduleNames.toArray(String[]::new), modules.toArray(NnModule[]::new));
    }

    /** {@code torch.nn.Kind(args)}, as Python would write the call. */
    @Override
    public String toString() {
        return kind + "(" + argsText() + ")";
    }
}
