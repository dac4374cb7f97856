package org.ctorch.nn;

import java.util.ArrayList;
import java.util.List;
import org.ctorch.Nn;
import org.ctorch.NnModule;

/**
 * {@code torch.nn.Sequential(OrderedDict(...))}: named children, so the state-dict keys are
 * torch's ({@code conv1.weight}); {@link #build()} makes each child in the order added (the
 * order of the random draws, as Python's constructor calls) and registers it under its name.
 */
public final class Sequential {
    private final List<String> names = new ArrayList<>();
    private final List<Object> children = new ArrayList<>();

    /** An empty Sequential; {@link #add} its children in order. */
    public Sequential() {}

    /** A child made when the Sequential is built. */
    public Sequential add(String name, ModuleBuilder child) {
        names.add(name);
        children.add(child);
        return this;
    }

    /** A module made already (registered, so shared with the caller, who keeps its own reference). */
    public Sequential add(String name, NnModule child) {
        names.add(name);
        children.add(child);
        return this;
    }

    /** Makes the Sequential and the children given as builders. */
    public NnModule build() {
        NnModule net = Nn.module("Sequential", "");
        try {
            for (int i = 0; i < names.size(); i++) {
                if (children.get(i) instanceof ModuleBuilder b) {
                    try (NnModule child = b.build()) {
                        net.registerModule(names.get(i), child);
                    }
                } else {
                    net.registerModule(names.get(i), (NnModule) children.get(i));
                }
            }
        } catch (RuntimeException e) {
            net.close();
            throw e;
        }
        return net;
    }
}
