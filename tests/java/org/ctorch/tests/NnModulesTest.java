package org.ctorch.tests;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.ctorch.CTorchException;
import org.ctorch.NnModule;
import org.ctorch.Tensor;
import org.ctorch.TensorDict;
import org.ctorch.Torch;
import org.ctorch.nn.*;
import org.junit.jupiter.api.Test;

/**
 * The generated torch.nn builders: the text they write, and the modules they make against
 * PyTorch's state-dict keys, shapes and reprs for the same constructor calls (torch 1.13 and
 * 2.x agree on these).
 */
class NnModulesTest {
    static List<String> keys(NnModule m) {
        List<String> out = new ArrayList<>();
        try (TensorDict sd = m.stateDict()) {
            for (long i = 0; i < sd.size(); i++) {
                out.add(sd.key(i));
            }
        }
        return out;
    }

    @Test
    void buildersWriteTorchNnArguments() {
        Conv2d c = new Conv2d(1, 6, 5).padding(2).bias(false);
        assertEquals("Conv2d(in_channels=1, out_channels=6, kernel_size=5, padding=2, bias=False)", c.toString());
        assertEquals("stride=(1, 2), padding='same'", new Conv2d(1, 1, new long[] {3, 3}).stride(1, 2).padding("same")
                .argsText().replaceAll("^.*kernel_size=\\(3, 3\\), ", ""));
        BatchNorm2d bn = new BatchNorm2d(4).momentum(null).eps(1e-5);
        assertEquals("num_features=4, momentum=None, eps=1.0e-5", bn.argsText());
        try (NnModule m = bn.build()) { // torch.nn.BatchNorm2d(4, momentum=None, eps=1e-05); 2.x adds bias=True
            assertTrue(m.repr().startsWith("BatchNorm2d(4, eps=1e-05, momentum=None, affine=True, "), m.repr());
        }
        assertEquals("normalized_shape=(8,)", new LayerNorm(new long[] {8}).argsText());
    }

    @Test
    void modulesHaveTorchNnStateDictKeysAndShapes() {
        try (NnModule conv = new Conv2d(1, 6, 5).padding(2).bias(false).build()) {
            // torch.nn.Conv2d(1, 6, 5, padding=2, bias=False)
            assertEquals("Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2), bias=False)", conv.repr());
            assertEquals(List.of("weight"), keys(conv));
            try (Tensor w = conv.tensor("weight")) {
                assertArrayEquals(new long[] {6, 1, 5, 5}, w.shape());
            }
        }
        try (NnModule bn = new BatchNorm2d(16).build()) {
            assertEquals(List.of("weight", "bias", "running_mean", "running_var", "num_batches_tracked"), keys(bn));
        }
        try (NnModule lstm = new LSTM(10, 20).numLayers(2).batchFirst(true).build();
             Tensor y = lstm.forward(Torch.zeros(new long[] {3, 7, 10}))) {
            assertEquals(List.of("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l1",
                    "weight_hh_l1", "bias_ih_l1", "bias_hh_l1"), keys(lstm));
            assertArrayEquals(new long[] {3, 7, 20}, y.shape());
        }
    }

    @Test
    void moduleArgumentsGoByHandle() {
        try (NnModule layer = new TransformerEncoderLayer(8, 2).dimFeedforward(16).build();
             NnModule norm = new LayerNorm(new long[] {8}).build();
             NnModule enc = new TransformerEncoder(layer, 2).norm(norm).build()) {
            List<String> k = keys(enc);
            assertEquals("layers.0.self_attn.in_proj_weight", k.get(0));
            assertEquals(List.of("norm.weight", "norm.bias"), k.subList(k.size() - 2, k.size()));
        }
    }

    @Test
    void sequentialNamesItsChildren() {
        try (NnModule net = new Sequential().add("fc1", new Linear(4, 3)).add("act", new ReLU())
                .add("fc2", new Linear(3, 2).bias(false)).build()) {
            assertEquals(List.of("fc1.weight", "fc1.bias", "fc2.weight"), keys(net));
        }
        CTorchException e = assertThrows(CTorchException.class, () -> new Linear(-1, 2).build());
        assertEquals(true, e.getMessage().contains("in_features"), e.getMessage());
    }
}
