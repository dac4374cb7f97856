// LeNet-5 on Fashion-MNIST, one epoch: examples/lenet5.c in Java. The same seed gives the C
// program's output and weights bit for bit (tests/bindings/go_lenet5_twin.py); the last line's
// accuracies are those of the saved weights loaded into a fresh model.
import java.util.List;
import org.ctorch.*;
import org.ctorch.nn.*;

public class LeNet5 {
    // Named children: the state-dict keys of lenet5.c and lenet5.py (conv1.weight, ...).
    static NnModule lenet5() {
        return new Sequential().add("conv1", new Conv2d(1, 6, 5)).add("relu1", new ReLU()).add("pool1", new MaxPool2d(2))
            .add("conv2", new Conv2d(6, 16, 5)).add("relu2", new ReLU()).add("pool2", new MaxPool2d(2))
            .add("flatten", new Flatten()).add("fc1", new Linear(256, 120)).add("relu3", new ReLU())
            .add("fc2", new Linear(120, 84)).add("relu4", new ReLU()).add("fc3", new Linear(84, 10)).build();
    }

    static String arg(String[] args, String key, String dflt) {
        int i = List.of(args).indexOf(key);
        return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
    }

    public static void main(String[] args) {
        String dir = arg(args, "--data", "/usr/share/datasets/fashion-mnist"), save = arg(args, "--save", "lenet5.pt");
        long seed = Long.parseLong(arg(args, "--seed", "1"));
        Tensor[] train = Data.readMnist(dir, true), test = Data.readMnist(dir, false);
        // Standardised with the training set's mean and (unbiased) std, as lenet5.c.
        Tensor scaled = train[0].to(DType.FLOAT32).div(255.0), mean = scaled.mean(), std = scaled.std();
        java.util.function.Function<Tensor, Tensor> prep =
            img -> img.to(DType.FLOAT32).div(255.0).sub(mean).div(std).reshape(new long[] {-1, 1, 28, 28});
        DataLoader trainLoader = Data.loader(prep.apply(train[0]), train[1], 256, true, seed, false);
        DataLoader testLoader = Data.loader(prep.apply(test[0]), test[1], 1000, false, 0, false);
        Torch.manualSeed(seed);
        NnModule net = lenet5();
        Optimizer opt = Optim.adamW(net, 1e-3); // weight decay 0.01, torch's default
        System.out.printf("LeNet-5 on Fashion-MNIST (%d training images), 1 epoch(s), batch 256, %d thread(s), seed %d%n",
            train[1].numel(), CApi.getNumThreads(), seed);
        long t0 = System.nanoTime(), correct = 0, seen = 0;
        double lossSum = 0;
        for (Tensor[] b : Data.epoch(trainLoader, 0)) {
            try (Scope s = Torch.scope()) {
                s.adoptAll(b);
                Tensor logits = net.forward(b[0]), loss = logits.crossEntropyLoss(b[1]);
                Optim.backwardStep(opt, loss);
                lossSum += loss.item() * b[1].numel();
                seen += b[1].numel();
                correct += Data.topKHits(logits, b[1], 1);
            }
        }
        double dt = (System.nanoTime() - t0) / 1e9; // training only
        double[] acc = Data.topKAccuracy(net, testLoader, 1, 5);
        System.out.printf("epoch 1/1 loss=%.4f train_acc=%.4f test_acc=%.4f top5=%.4f images_per_s=%.1f time=%.1fs%n",
            lossSum / seen, (double) correct / seen, acc[0], acc[1], seen / dt, dt);
        Nn.save(net, save);
        System.out.println("saved weights to " + save);
        NnModule again = lenet5();
        Nn.load(again, save);
        acc = Data.topKAccuracy(again, testLoader, 1, 5); // the reloaded weights: the last line must be lenet5.c's
        System.out.printf("test_accuracy=%.4f top5=%.4f images_per_s=%.1f%n", acc[0], acc[1], seen / dt);
    }
}
