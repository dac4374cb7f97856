/*
 * LeNet-5 on Fashion-MNIST, data-parallel over several processes with
 * ctorch's torch.distributed (c10d, Gloo) API.
 *
 * Same network (the modules of lenet5_nn.h), initialisation, optimiser and
 * hyper-parameters as examples/lenet5.c (AdamW lr 1e-3, weight decay 0.01, cross-entropy), with
 * the same GLOBAL batch of 256: each of W ranks takes 256/W images per step,
 * so a step averages the gradients of 256 images exactly as the
 * single-process demo's mean loss does, and an epoch has the same number of
 * optimiser steps. (Keeping 256 per rank would double the global batch and
 * halve the steps per epoch: a different training run, not a faster one.)
 *
 * Per epoch every rank draws the same permutation of the 60,000 training
 * images (seeded by ctorch_data_epoch_seed(seed, epoch)) and takes its shard
 * perm[rank::W], as PyTorch's DistributedSampler does. After backward the
 * gradients are averaged with ctorch_dist_average_gradients (bucketed
 * all-reduces); rank 0's initial parameters are broadcast first. The test
 * set is sharded too and the counts all-reduced. At the end the ranks check
 * that their parameters are bit-identical.
 *
 * Elastic restarts: with --checkpoint-dir, rank 0 saves the training state
 * (model, AdamW state, epoch and step: ctorch_train_state_save_kept) every
 * --checkpoint-every steps, and every rank starts from the newest one found
 * there, so a group that torchrun restarts after a failure (--max-restarts)
 * goes on from the last checkpoint and ends with the weights of a run that
 * never stopped. The directory must be one that every node sees.
 *
 * Run 2 ranks on this machine (torchrun sets the environment):
 *   torchrun --no-python --nproc-per-node 2 build/examples/ddp_lenet5 --epochs 5
 * On GPUs (one per rank: cuda:LOCAL_RANK; NCCL where available, else Gloo):
 *   torchrun --no-python --nproc-per-node 2 build/examples/ddp_lenet5 --device cuda --amp bf16
 * Rank 0's last line is machine-readable:
 *   test_accuracy=<fraction> top5=<fraction> images_per_s=<number> ranks=<W>
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctorch.h"

#define GLOBAL_BATCH 256
#define EVAL_BATCH 1000

static int g_rank = -1;

#define CHECK(call)                                                                                \
  do {                                                                                             \
    ctorch_status st_ = (call);                                                                    \
    if (st_ != CTORCH_OK) {                                                                        \
      fprintf(stderr, "ddp_lenet5 rank %d: %s:%d: %s failed with %s: %s\n", g_rank, __FILE__,      \
              __LINE__, #call, ctorch_status_name(st_), ctorch_last_error());                      \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#include "train_device.h"
#include "example_args.h"
#include "fashion_mnist.h"
#include "lenet5_nn.h"

static train_target g_tgt = {{CTORCH_DEVICE_CPU, -1}, 0, NULL};

/* A loader (in order, batches of `batch`) over this rank's shard of x and y:
 * rows order[rank::world], the first floor(n/world) of them, so every rank
 * has the same number of rows and therefore of steps. The shard goes to the
 * target device in one copy. */
static ctorch_data_loader shard_loader(ctorch_tensor x, ctorch_tensor y, ctorch_tensor order, int rank, int world,
                                       int64_t batch) {
  int64_t n = 0, start = rank;
  ctorch_tensor idx = NULL, t = NULL, xs = NULL, ys = NULL;
  ctorch_data_loader loader = NULL;
  CHECK(ctorch_tensor_numel(&n, order));
  CHECK(ctorch_slice_Tensor(&t, order, 0, &start, NULL, world));
  CHECK(ctorch_narrow(&idx, t, 0, 0, n / world));
  ctorch_tensor_free(t);
  CHECK(ctorch_index_select(&xs, x, 0, idx));
  CHECK(ctorch_index_select(&ys, y, 0, idx));
  ctorch_tensor_free(idx);
  to_target(&g_tgt, &xs);
  to_target(&g_tgt, &ys);
  CHECK(ctorch_data_loader_new(&loader, xs, ys, batch, 0, 0, 0));
  ctorch_tensor_free(xs); /* the loader holds its own references */
  ctorch_tensor_free(ys);
  return loader;
}

/* Sums int64 counters over the group, in place. */
static void sum_over_ranks(ctorch_process_group pg, int64_t *v, int64_t n) {
  ctorch_tensor t = NULL;
  CHECK(ctorch_tensor_from_data(&t, v, (size_t)n * sizeof *v, &n, 1, CTORCH_INT64));
  to_target(&g_tgt, &t); /* NCCL reduces device tensors only */
  CHECK(ctorch_dist_all_reduce(pg, t, CTORCH_REDUCE_SUM));
  CHECK(ctorch_tensor_copy_to(v, (size_t)n * sizeof *v, t));
  ctorch_tensor_free(t);
}

/* Accuracy and top-5 on this rank's test shard, summed over the group. */
static void evaluate(ctorch_process_group pg, ctorch_nn_module net, ctorch_data_loader test, double *acc,
                     double *top5) {
  int64_t c[3] = {0, 0, 0}; /* correct, in top 5, seen */
  ctorch_autocast_scope amp = amp_enter(&g_tgt);
  nn_count_on(net, test, c);
  amp_leave(amp);
  sum_over_ranks(pg, c, 3);
  *acc = (double)c[0] / (double)c[2];
  *top5 = (double)c[1] / (double)c[2];
}

/* 1 if every rank holds bit-identical parameters (rank 0's are compared with everyone's). */
static int parameters_agree(ctorch_process_group pg, ctorch_tensor *p, size_t np, int world) {
  ctorch_tensor flat[16], mine = NULL; /* LeNet-5 has 10 parameters */
  ctorch_tensor_list gathered = NULL;
  ctorch_handle_scope s = scope_enter(); /* the flattened copies */
  size_t k;
  int i, same = 1;
  for (k = 0; k < np && k < 16; ++k) {
    ctorch_tensor d = NULL;
    CHECK(ctorch_tensor_detach(&d, p[k]));
    CHECK(ctorch_reshape(&flat[k], d, (const int64_t[]){-1}, 1));
  }
  CHECK(ctorch_cat(&mine, flat, k, 0));
  scope_keep(mine);
  scope_leave(s);
  CHECK(ctorch_dist_all_gather_list(&gathered, pg, mine));
  for (i = 1; i < world; ++i) {
    ctorch_tensor a = NULL, b = NULL;
    int eq = 0;
    CHECK(ctorch_tensor_list_get(&a, gathered, 0));
    CHECK(ctorch_tensor_list_get(&b, gathered, (size_t)i));
    CHECK(ctorch_equal(&eq, a, b));
    same = same && eq;
    ctorch_tensor_free(a);
    ctorch_tensor_free(b);
  }
  ctorch_tensor_list_free(gathered);
  ctorch_tensor_free(mine);
  return same;
}

static void usage(const char *prog) {
  fprintf(stderr,
          "usage: torchrun --no-python --nproc-per-node W %s [--epochs N] [--data DIR] [--seed S]\n"
          "                                [--threads T] [--steps K] [--bucket-bytes B] [--save PATH]\n"
          "                                [--checkpoint-dir DIR] [--checkpoint-every K] [--kill-at-step K]\n"
          "                                [--device cpu|cuda[:N]] [--amp none|bf16|fp16] [--backend gloo|nccl]\n"
          "  needs MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE (torchrun, or scripts/ddp over it, sets them)\n"
          "  --epochs N        training epochs (default 1)\n"
          "  --data DIR        Fashion-MNIST IDX files (default /usr/share/datasets/fashion-mnist)\n"
          "  --seed S          seed of the initialisation and the data order (default 1)\n"
          "  --threads T       intra-op threads per rank (default: online CPUs / ranks on this node, at least 1)\n"
          "  --steps K         stop each epoch after K steps (quick checks)\n"
          "  --bucket-bytes B  gradient bucket size (default 0 = 25 MiB: one bucket for LeNet-5)\n"
          "  --save PATH       rank 0 writes the trained weights there (default: not saved)\n"
          "  --checkpoint-dir DIR  resume from the newest training state there; rank 0 saves one every\n"
          "                    --checkpoint-every steps (default 10), keeping the last 2\n"
          "  --kill-at-step K  fault drill: in torchrun's first attempt (TORCHELASTIC_RESTART_COUNT 0 or unset)\n"
          "                    the last rank kills itself (SIGKILL) before global step K\n"
          "  --device D        cpu (default), cuda (= cuda:LOCAL_RANK) or cuda:N\n"
          "  --amp P           none (default), bf16 or fp16 (autocast; fp16 scales the loss)\n"
          "  --backend B       gloo, or nccl (default on CUDA where ctorch_dist_nccl_available)\n",
          prog);
}

int main(int argc, char **argv) {
  const char *data_dir = "/usr/share/datasets/fashion-mnist", *save = "";
  int epochs = 1, threads = 0, steps = 0, epoch, world = 1, rank = 0, local_rank = -1;
  int checkpoint_every = 10, kill_at_step = 0, first_epoch = 0;
  const char *checkpoint_dir = "";
  int64_t global_step = 0, resume_step = 0; /* optimiser steps taken; the newest checkpoint's */
  unsigned long long seed = 1, bucket_bytes = 0;
  ctorch_process_group pg = NULL;
  ctorch_tensor train_x = NULL, train_labels = NULL, test_x = NULL, test_labels = NULL;
  ctorch_nn_module net = NULL;
  ctorch_tensor *params = NULL;
  size_t np = 0;
  ctorch_data_loader test = NULL;
  ctorch_optimizer opt = NULL;
  int64_t n_train = 0, per_rank_batch;
  double acc = 0, top5 = 0, train_time = 0;
  int64_t images_seen = 0;
  const char *backend = NULL, *device_arg = "cpu";
  ctorch_device device;

  {
    static const char *const backends[] = {"gloo", "nccl", NULL};
    const example_arg args[] = {
        EXAMPLE_INT("--epochs", &epochs),
        EXAMPLE_STR("--data", &data_dir),
        EXAMPLE_U64("--seed", &seed),
        EXAMPLE_INT("--threads", &threads),
        EXAMPLE_INT("--steps", &steps),
        EXAMPLE_U64("--bucket-bytes", &bucket_bytes),
        EXAMPLE_STR("--save", &save),
        EXAMPLE_DEVICE("--device", &device, &device_arg),
        EXAMPLE_AMP("--amp", &g_tgt.amp),
        EXAMPLE_CHOICE("--backend", &backend, backends),
        EXAMPLE_STR("--checkpoint-dir", &checkpoint_dir),
        EXAMPLE_INT("--checkpoint-every", &checkpoint_every),
        EXAMPLE_INT("--kill-at-step", &kill_at_step),
    };
    int rc = example_parse_args(argc, argv, args, EXAMPLE_NARGS(args), usage);
    if (rc >= 0) return rc;
  }
  if (epochs < 1) {
    fprintf(stderr, "ddp_lenet5: --epochs must be >= 1\n");
    return 2;
  }
  if (checkpoint_every < 1) {
    fprintf(stderr, "ddp_lenet5: --checkpoint-every must be >= 1\n");
    return 2;
  }
  {
    /* the drill fires in the first attempt only, so the restarted group can finish */
    const char *attempt = getenv("TORCHELASTIC_RESTART_COUNT");
    if (attempt && strcmp(attempt, "0") != 0) kill_at_step = 0;
  }

  parse_device(device_arg, &device);
  if (device.type == CTORCH_DEVICE_CUDA) {
    int n = 0, nccl = 0;
    CHECK(ctorch_cuda_device_count(&n));
    if (n == 0) {
      g_tgt.device = device;
      target_init(&g_tgt, "ddp_lenet5"); /* exits, saying why */
    }
    CHECK(ctorch_dist_nccl_available(&nccl));
    if (!backend) backend = nccl ? "nccl" : "gloo";
  }
  CHECK(ctorch_dist_init_from_env(&pg, &local_rank, backend ? backend : "gloo", 600000));
  CHECK(ctorch_process_group_rank(&rank, pg));
  CHECK(ctorch_process_group_size(&world, pg));
  g_rank = rank;
  if (device.type == CTORCH_DEVICE_CUDA && !strcmp(device_arg, "cuda")) {
    int n = 1;
    CHECK(ctorch_cuda_device_count(&n));
    device.index = (local_rank >= 0 ? local_rank : rank) % n; /* one GPU per rank */
  }
  g_tgt.device = device;
  target_init(&g_tgt, "ddp_lenet5");
  if (GLOBAL_BATCH % world != 0) {
    fprintf(stderr, "ddp_lenet5: the global batch %d must divide among %d ranks\n", GLOBAL_BATCH, world);
    return 2;
  }
  per_rank_batch = GLOBAL_BATCH / world;
  if (threads <= 0) {
    /* the ranks on this node share its CPUs: LOCAL_WORLD_SIZE of them under torchrun */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const char *lws = getenv("LOCAL_WORLD_SIZE");
    int local = lws && atoi(lws) > 0 ? atoi(lws) : world;
    threads = cpus > local ? (int)(cpus / local) : 1;
  }
  CHECK(ctorch_set_num_threads(threads));

  /* data: every rank reads the files and standardises with the training set's statistics */
  load_data(data_dir, &train_x, &train_labels, &test_x, &test_labels);
  CHECK(ctorch_tensor_numel(&n_train, train_labels));
  {
    /* test shard: rows rank::world in file order */
    ctorch_tensor order = NULL;
    int64_t n_test = 0;
    CHECK(ctorch_tensor_numel(&n_test, test_labels));
    CHECK(ctorch_arange(&order, ctorch_scalar_int(n_test), NULL, NULL, NULL, NULL));
    test = shard_loader(test_x, test_labels, order, rank, world, EVAL_BATCH);
    ctorch_tensor_free(order);
    ctorch_tensor_free(test_x);
    ctorch_tensor_free(test_labels);
  }

  /* the same model everywhere: same seed, then rank 0's values broadcast anyway (as DDP does) */
  CHECK(ctorch_manual_seed(seed));
  net = make_lenet5();
  if (device.type != CTORCH_DEVICE_CPU) CHECK(ctorch_nn_module_to(net, &device, -1));
  params = nn_params(net, &np); /* the module's own tensors: broadcast and averaged in place */
  {
    ctorch_optim_options o;
    CHECK(ctorch_optim_options_default(&o, CTORCH_OPTIM_ADAMW)); /* lr 1e-3, betas (0.9, 0.999), wd 0.01 */
    CHECK(ctorch_optimizer_new_from_module(&opt, CTORCH_OPTIM_ADAMW, net, &o));
  }
  if (*checkpoint_dir) {
    /* every rank reads the same newest state: model, optimiser, where to go on */
    char *latest = NULL;
    CHECK(ctorch_train_state_latest(&latest, checkpoint_dir));
    if (latest) {
      int64_t e = 0;
      CHECK(ctorch_train_state_load(&e, &resume_step, NULL, latest, net, opt, NULL, NULL));
      first_epoch = (int)e;
      global_step = resume_step;
      if (rank == 0)
        printf("resuming from %s (epoch %d, step %lld)\n", latest, first_epoch + 1, (long long)resume_step);
      ctorch_string_free(latest);
    }
  }
  CHECK(ctorch_dist_broadcast_parameters(pg, params, np, 0));

  if (rank == 0) {
    printf("LeNet-5 on Fashion-MNIST (%lld training images), data-parallel over %d ranks, %d epoch(s), "
           "global batch %d = %d x %lld, %d thread(s) per rank, seed %llu\n",
           (long long)n_train, world, epochs, GLOBAL_BATCH, world, (long long)per_rank_batch, threads, seed);
    fflush(stdout);
  }

  for (epoch = first_epoch; epoch < epochs; ++epoch) {
    double t0, dt, loss_sum = 0;
    int64_t stats[3] = {0, 0, 0}; /* correct, seen, loss x 1e6 (summed over ranks below) */
    int64_t batch = 0, nbatches = 0;
    ctorch_data_loader train = NULL;
    uint64_t epoch_seed = 0;
    {
      /* one global permutation per epoch, identical on every rank; this rank's shard of it */
      ctorch_generator gen = NULL;
      ctorch_tensor perm = NULL;
      CHECK(ctorch_data_epoch_seed(&epoch_seed, seed, (uint64_t)epoch));
      CHECK(ctorch_generator_new(&gen, ctorch_device_cpu(), epoch_seed));
      CHECK(ctorch_randperm_generator(&perm, n_train, gen, NULL, NULL, NULL, NULL));
      train = shard_loader(train_x, train_labels, perm, rank, world, per_rank_batch);
      ctorch_tensor_free(perm);
      ctorch_generator_free(gen);
    }
    CHECK(ctorch_data_loader_num_batches(&nbatches, train));
    if (steps > 0 && steps < nbatches) nbatches = steps;
    CHECK(ctorch_data_loader_start_epoch(train, 0));
    for (; batch < nbatches && batch < resume_step - (int64_t)epoch * nbatches; ++batch) {
      /* resumed: the checkpoint's steps of this epoch are done; pass their batches */
      ctorch_handle_scope s = scope_enter();
      ctorch_tensor x = NULL, y = NULL;
      int has = 0;
      CHECK(ctorch_data_loader_next(&has, &x, &y, train));
      scope_leave(s);
    }
    CHECK(ctorch_dist_barrier(pg));
    t0 = now();
    for (; batch < nbatches; ++batch) {
      ctorch_handle_scope s = scope_enter(); /* frees the step's tensors */
      ctorch_tensor x = NULL, y = NULL, logits = NULL, loss = NULL;
      ctorch_autocast_scope amp;
      int has = 0;
      if (kill_at_step > 0 && global_step + 1 == kill_at_step && rank == world - 1) {
        fprintf(stderr, "ddp_lenet5 rank %d: fault drill: killing myself before step %d\n", rank, kill_at_step);
        fflush(stderr);
        raise(SIGKILL);
      }
      CHECK(ctorch_data_loader_next(&has, &x, &y, train));
      if (!has) {
        scope_leave(s);
        break;
      }
      amp = amp_enter(&g_tgt);
      CHECK(ctorch_nn_module_forward(&logits, net, x));
      CHECK(ctorch_cross_entropy_loss(&loss, logits, y, NULL, 1 /* mean */, -100, 0.0));
      amp_leave(amp);
      scaled_backward(&g_tgt, opt, loss);
      /* mean over this rank's images -> mean over the global batch (scaled
       * gradients average as well: every rank has the same scale) */
      CHECK(ctorch_dist_average_gradients(pg, params, np, (size_t)bucket_bytes));
      /* identical gradients on every rank: with fp16 all skip or all step */
      scaled_step(&g_tgt, opt);
      tally_batch(logits, y, loss, &stats[0], &loss_sum, &stats[1]);
      scope_leave(s);
      ++global_step;
      if (*checkpoint_dir && rank == 0 && global_step % checkpoint_every == 0)
        CHECK(ctorch_train_state_save_kept(checkpoint_dir, 2, CTORCH_BEST_NONE, net, opt, NULL, NULL, epoch,
                                           global_step, NAN));
      if (rank == 0 && ((batch + 1) % 50 == 0 || batch + 1 == nbatches)) {
        printf("epoch %d/%d step %lld/%lld local loss %.4f %.0f img/s (all ranks)\n", epoch + 1, epochs,
               (long long)(batch + 1), (long long)nbatches, loss_sum / (double)stats[1],
               (double)(stats[1] * world) / (now() - t0));
        fflush(stdout);
      }
    }
    CHECK(ctorch_dist_barrier(pg));
    dt = now() - t0;
    ctorch_data_loader_free(train);
    stats[2] = (int64_t)llround(loss_sum * 1e6);
    sum_over_ranks(pg, stats, 3);
    train_time += dt;
    images_seen += stats[1];
    evaluate(pg, net, test, &acc, &top5);
    if (rank == 0) {
      printf("epoch %d/%d loss=%.4f train_acc=%.4f test_acc=%.4f top5=%.4f images_per_s=%.1f time=%.1fs\n",
             epoch + 1, epochs, (double)stats[2] * 1e-6 / (double)stats[1], (double)stats[0] / (double)stats[1],
             acc, top5, (double)stats[1] / dt, dt);
      fflush(stdout);
    }
  }

  if (!parameters_agree(pg, params, np, world)) {
    fprintf(stderr, "ddp_lenet5 rank %d: parameters differ between ranks after training\n", rank);
    return 1;
  }
  if (rank == 0) {
    printf("parameters identical on all %d ranks\n", world);
    if (save && *save) {
      const ctorch_device cpu = ctorch_device_cpu();
      CHECK(ctorch_nn_module_to(net, &cpu, -1)); /* training is over: a file any machine can read */
      nn_save(net, save);
      printf("saved weights to %s\n", save);
    }
  }

  ctorch_optimizer_free(opt);
  ctorch_data_loader_free(test);
  nn_free_params(params, np);
  ctorch_nn_module_free(net);
  ctorch_tensor_free(train_x);
  ctorch_tensor_free(train_labels);
  CHECK(ctorch_dist_barrier(pg));
  ctorch_process_group_free(pg);
  target_free(&g_tgt);
  if (rank == 0)
    printf("test_accuracy=%.4f top5=%.4f images_per_s=%.1f ranks=%d\n", acc, top5,
           (double)images_seen / train_time, world);
  return 0;
}
