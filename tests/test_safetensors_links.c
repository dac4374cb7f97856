/* Sharded safetensors indexes and symbolic links
 * (shim/safetensors/safetensors_sharded.cpp): every shard is resolved with
 * realpath and must lie inside the index's real folder. A shard that is a
 * link to a file elsewhere, or is reached through a linked folder that
 * points out, is refused with VALUE naming it; links that stay inside, and
 * an index reached through a linked folder, load. */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_main.h"
#include "tmp_files.h"

static void make_dir(void) { ct_tmp_dir_make("safetensors_links"); }

/* T/outside/secret.safetensors (a = [1, 2]), T/model/real.safetensors
 * (b = [3]), T/model/inner/deep.safetensors (c = [4]). */
static void make_tree(void) {
  const float va[2] = {1, 2}, vb[1] = {3}, vc[1] = {4};
  const int64_t s2[1] = {2}, s1[1] = {1};
  ctorch_tensor a = ct_floats(va, s2, 1), b = ct_floats(vb, s1, 1), c = ct_floats(vc, s1, 1);
  const char *na[1] = {"a"}, *nb[1] = {"b"}, *nc[1] = {"c"};
  ck_assert_int_eq(mkdir(ct_tmp_path("outside"), 0755), 0);
  ck_assert_int_eq(mkdir(ct_tmp_path("model"), 0755), 0);
  ck_assert_int_eq(mkdir(ct_tmp_path("model/inner"), 0755), 0);
  CT_OK(ctorch_safetensors_save(ct_tmp_path("outside/secret.safetensors"), na, &a, 1, NULL, NULL, 0));
  CT_OK(ctorch_safetensors_save(ct_tmp_path("model/real.safetensors"), nb, &b, 1, NULL, NULL, 0));
  CT_OK(ctorch_safetensors_save(ct_tmp_path("model/inner/deep.safetensors"), nc, &c, 1, NULL, NULL, 0));
  ctorch_tensor_free(a);
  ctorch_tensor_free(b);
  ctorch_tensor_free(c);
}

static void write_index(const char *name, const char *weight_map) {
  char j[1024];
  snprintf(j, sizeof j, "{\"weight_map\": %s}", weight_map);
  ct_write_file(ct_tmp_path(name), j, strlen(j));
}

static void loads(const char *index, size_t want) {
  ctorch_tensor_dict d = NULL;
  size_t n = 0;
  CT_OK(ctorch_safetensors_load_sharded(&d, index, NULL));
  CT_OK(ctorch_tensor_dict_size(&n, d));
  ck_assert_uint_eq(n, want);
  ctorch_tensor_dict_free(d);
}

static void refused(const char *index, const char *shard) {
  ctorch_tensor_dict d = NULL;
  CT_FAILS(CTORCH_VALUE, ctorch_safetensors_load_sharded(&d, index, NULL));
  ck_assert_ptr_null(d);
  CT_ERROR_HAS("ctorch_safetensors_load_sharded");
  CT_ERROR_HAS(shard);
  CT_ERROR_HAS("outside the index's folder");
  CT_ERROR_HAS("secret.safetensors");  /* where it leads */
}

START_TEST(shard_linked_out_refused) {
  make_tree();
  /* A shard that is a link (relative or absolute) to a file outside. */
  ck_assert_int_eq(symlink("../outside/secret.safetensors", ct_tmp_path("model/s1.safetensors")), 0);
  write_index("model/rel.index.json", "{\"a\": \"s1.safetensors\"}");
  refused(ct_tmp_path("model/rel.index.json"), "'s1.safetensors'");
  ck_assert_int_eq(symlink(ct_tmp_path("outside/secret.safetensors"), ct_tmp_path("model/s2.safetensors")), 0);
  write_index("model/abs.index.json", "{\"b\": \"real.safetensors\", \"a\": \"s2.safetensors\"}");
  refused(ct_tmp_path("model/abs.index.json"), "'s2.safetensors'");
  /* A chain of links that ends outside. */
  ck_assert_int_eq(symlink("s1.safetensors", ct_tmp_path("model/s3.safetensors")), 0);
  write_index("model/chain.index.json", "{\"a\": \"s3.safetensors\"}");
  refused(ct_tmp_path("model/chain.index.json"), "'s3.safetensors'");
}
END_TEST

START_TEST(folder_linked_out_refused) {
  make_tree();
  ck_assert_int_eq(symlink("../outside", ct_tmp_path("model/sub")), 0);
  write_index("model/sub.index.json", "{\"a\": \"sub/secret.safetensors\"}");
  refused(ct_tmp_path("model/sub.index.json"), "'sub/secret.safetensors'");
  /* A linked folder inside a real one. */
  ck_assert_int_eq(symlink("../../outside", ct_tmp_path("model/inner/up")), 0);
  write_index("model/up.index.json", "{\"a\": \"inner/up/secret.safetensors\"}");
  refused(ct_tmp_path("model/up.index.json"), "'inner/up/secret.safetensors'");
}
END_TEST

START_TEST(links_inside_load) {
  char cwd[4096];
  make_tree();
  /* A shard linked to a file of the folder, a folder linked inside. */
  ck_assert_int_eq(symlink("real.safetensors", ct_tmp_path("model/alias.safetensors")), 0);
  ck_assert_int_eq(symlink("inner", ct_tmp_path("model/linkdir")), 0);
  write_index("model/ok.index.json", "{\"b\": \"alias.safetensors\", \"c\": \"linkdir/deep.safetensors\"}");
  loads(ct_tmp_path("model/ok.index.json"), 2);
  /* The index reached through a linked folder: its real folder counts. */
  ck_assert_int_eq(symlink("model", ct_tmp_path("modellink")), 0);
  loads(ct_tmp_path("modellink/ok.index.json"), 2);
  /* An index named without a folder: the current directory's. */
  ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
  ck_assert_int_eq(chdir(ct_tmp_path("model")), 0);
  loads("ok.index.json", 2);
  ck_assert_int_eq(symlink("../outside/secret.safetensors", "s1.safetensors"), 0);
  write_index("model/rel.index.json", "{\"a\": \"s1.safetensors\"}");
  refused("rel.index.json", "'s1.safetensors'");
  ck_assert_int_eq(chdir(cwd), 0);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("safetensors_links");
  TCase *tc = tcase_create("links");
  tcase_add_checked_fixture(tc, make_dir, ct_tmp_dir_remove);
  tcase_add_test(tc, shard_linked_out_refused);
  tcase_add_test(tc, folder_linked_out_refused);
  tcase_add_test(tc, links_inside_load);
  suite_add_tcase(s, tc);
  return s;
}

CTORCH_CHECK_MAIN()
