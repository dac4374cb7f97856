# Every ctest test's labels, in one place: by capability (what it
# exercises: core, ops, nn, optim, data, train, models, io, dist, harden,
# threads, gen, docs, abi, interop, pybridge, examples, bench, lm, cuda,
# bindings-<lang>, packages) and by cost (what it starts: python, cargo, go,
# node; training: trains a model for many steps; slow: took >= 10 s in the
# measured table tests/test-costs.txt, from a warm fresh clone on a quiet
# machine: tests/README.md's "a test should take under 10 s"). `ctest -L nn`, `ctest -LE slow`,
# scripts/quick (the developer's loop) and scripts/sanitize (its rule for what
# runs under ASan) select by these labels.
#
# How: add_test is wrapped (this file is included before any test is added,
# and CMake functions are global, so bench/ and every directory added later
# use it too). The wrapper adds the test, then defers the labelling to the end
# of the test's own directory (only there can set_property(TEST) reach it with
# CMake < 3.28), when that directory has set the test's ENVIRONMENT too. A
# test in a new directory gets that directory's name as its capability label
# until a rule below names it better. At the end of the top-level directory
# every test of every directory is checked to carry a capability and a cost
# label: configuring fails, naming the tests, if one does not. The ctest test
# labels_complete checks the same on the test list ctest reads (run as a
# script, this file does that: a later set_property(TEST ... LABELS) without
# APPEND would replace the labels after the configure-time check).
#
# COST: ctest starts the tests it knows to be long first (its own
# Testing/Temporary/CTestCostData.txt after a run; on a fresh clone nothing),
# so the table's seconds become each test's COST property: the long tests
# start first and the two workers stay busy to the end.

set(CTORCH_CAPABILITY_LABELS core ops nn infer optim data train models io dist harden threads gen docs abi interop
  pybridge examples lm bench cuda bindings bindings-python bindings-node bindings-go bindings-rust bindings-java packages)
set(CTORCH_COST_LABELS cheap python cargo go node java training slow)
# cmake -DCTEST=<ctest> -P tests/labels.cmake, in a build directory: the ctest
# test labels_complete: every test ctest lists carries a capability label and
# a cost label.
if(CMAKE_SCRIPT_MODE_FILE)
  cmake_policy(VERSION 3.19)  # (IN_LIST: the project's own policies do not reach a script)
  # The tests ctest lists, all of them or those carrying a label matching a
  # regular expression (ctest -N -L; fast, where reading --show-only's JSON in
  # CMake took 12 s).
  function(_ctorch_listed out)
    execute_process(COMMAND ${CTEST} -N ${ARGN} OUTPUT_VARIABLE o RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "labels_complete: ctest -N ${ARGN} failed")
    endif()
    string(REGEX MATCHALL "Test +#[0-9]+: [^\n]+" lines "${o}")
    set(names "")
    foreach(l ${lines})
      string(REGEX REPLACE "^Test +#[0-9]+: " "" l "${l}")
      list(APPEND names "${l}")
    endforeach()
    set(${out} ${names} PARENT_SCOPE)
  endfunction()
  execute_process(COMMAND ${CTEST} --print-labels OUTPUT_VARIABLE o)
  string(REGEX REPLACE ".*All Labels:" "" o "${o}")
  string(REGEX MATCHALL "[^ \t\n]+" all_labels "${o}")
  # A label outside the cost list is a capability (the name of a directory no
  # rule knows yet counts, as at configure time).
  set(cap "")
  foreach(l ${all_labels})
    if(NOT l IN_LIST CTORCH_COST_LABELS)
      list(APPEND cap ${l})
    endif()
  endforeach()
  list(JOIN cap "|" cap_rx)
  list(JOIN CTORCH_COST_LABELS "|" cost_rx)
  _ctorch_listed(all)
  _ctorch_listed(with_cap -L "^(${cap_rx})$")
  _ctorch_listed(with_cost -L "^(${cost_rx})$")
  set(bad "")
  foreach(t ${all})
    if(NOT t IN_LIST with_cap)
      list(APPEND bad "${t} (no capability label)")
    endif()
    if(NOT t IN_LIST with_cost)
      list(APPEND bad "${t} (no cost label)")
    endif()
  endforeach()
  list(LENGTH all n)
  if(bad OR n EQUAL 0)
    list(JOIN bad "\n  " bad)
    message(FATAL_ERROR "labels_complete: of ${n} tests:\n  ${bad}")
  endif()
  message("labels_complete: all ${n} tests carry a capability and a cost label")
  return()
endif()

set(CTORCH_TEST_TIMEOUT 900 CACHE STRING "Seconds a test may run when it sets no TIMEOUT of its own (tests/labels.cmake)")
set_property(GLOBAL PROPERTY CTORCH_CAPABILITY_LABELS "${CTORCH_CAPABILITY_LABELS}")
set_property(GLOBAL PROPERTY CTORCH_COST_LABELS "${CTORCH_COST_LABELS}")

# Measured seconds per test (scripts/test-times --costs writes it): the larger
# of the two libtorch versions' times.
set(_ctorch_costs_file ${CMAKE_CURRENT_LIST_DIR}/test-costs.txt)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_ctorch_costs_file})
if(EXISTS ${_ctorch_costs_file})
  file(STRINGS ${_ctorch_costs_file} _lines REGEX "^[A-Za-z0-9_.-]+ [0-9.]+$")
  foreach(l ${_lines})
    string(REPLACE " " ";" l "${l}")
    list(GET l 0 _n)
    list(GET l 1 _s)
    set_property(GLOBAL PROPERTY CTORCH_COST_${_n} ${_s})
  endforeach()
endif()

function(add_test)
  # Forward every argument as it came: an argument holding a ';' (a `sh -c`
  # script) must stay one argument, so each goes through as a bracket argument.
  set(_args "")
  math(EXPR _last "${ARGC} - 1")
  foreach(i RANGE 0 ${_last})
    string(APPEND _args " [==[${ARGV${i}}]==]")
  endforeach()
  cmake_language(EVAL CODE "_add_test(${_args})")
  if(ARGV0 STREQUAL "NAME")
    set(name ${ARGV1})
  else()
    set(name ${ARGV0})
  endif()
  # (A deferred call's arguments are read when it runs: the name goes in as
  # a literal, the command in a global property.)
  set_property(GLOBAL PROPERTY CTORCH_TEST_ARGV_${name} "${ARGV}")
  cmake_language(EVAL CODE "cmake_language(DEFER CALL _ctorch_label_test [==[${name}]==])")
endfunction()

# Capability label of a test by its directory (relative to the source root)
# and its name; the first rule that matches wins.
function(_ctorch_capability out dir name)
  string(REGEX REPLACE "^tests/?" "" d "${dir}")
  set(l "")
  if(name MATCHES "_cuda$|^test_cuda|gpu")
    set(l cuda)
  elseif(dir MATCHES "^bench")
    set(l bench)
  elseif(d STREQUAL "")
    # The top-level C suites (tests/test_*.c) and the header checks.
    if(name MATCHES "^test_(nn|ops_nn)")
      set(l nn)
    elseif(name MATCHES "^test_ops_")
      set(l ops)
    elseif(name MATCHES "^test_optim")
      set(l optim)
    elseif(name MATCHES "^test_(data|loaders)")
      set(l data)
    elseif(name MATCHES "^test_(safetensors|serialize|tensorboard)")
      set(l io)
    elseif(name MATCHES "^test_(jit|amp)")
      set(l models)
    elseif(name MATCHES "^test_dist")
      set(l dist)
    elseif(name MATCHES "^test_threads")
      set(l threads)
    elseif(name MATCHES "^test_train")
      set(l train)
    elseif(name MATCHES "^install_")
      set(l packages)
    else()
      set(l core)
    endif()
  elseif(d STREQUAL "bindings")
    if(name MATCHES "^binding_(python|node|go|rust|java)_")
      set(l bindings-${CMAKE_MATCH_1})
    else()
      set(l bindings)
    endif()
  elseif(d STREQUAL "package")
    set(l packages)
  elseif(d MATCHES "^(handles|optional|abi|pyzygote)$")
    set(l core)
    if(d STREQUAL "abi")
      set(l abi)
    endif()
  elseif(d STREQUAL "dispatch")
    # Any registered operator by name (ctorch_op_call): the operator layer.
    set(l ops)
  elseif(d MATCHES "^(nn|nn_seq)$")
    set(l nn)
  elseif(d STREQUAL "optim")
    set(l optim)
  elseif(d MATCHES "^(loader|transforms|image)$")
    set(l data)
  elseif(d MATCHES "^(train|utils|metrics|logging|amp)$")
    set(l train)
  elseif(d MATCHES "^(models|serve)$")
    set(l models)
  elseif(d MATCHES "^(safetensors|zip)$")
    set(l io)
  elseif(d MATCHES "^(harden|fuzz_text|sweep)$")
    set(l harden)
  elseif(d STREQUAL "gen")
    set(l gen)
  elseif(d MATCHES "^(docs|reference)$")
    set(l docs)
  elseif(d STREQUAL "infer")
    set(l infer)
  elseif(d STREQUAL "dist")
    set(l dist)
  elseif(d STREQUAL "python")
    set(l interop)
  elseif(d STREQUAL "pybridge")
    set(l pybridge)
  elseif(d STREQUAL "examples")
    set(l examples)
  elseif(d MATCHES "^(lm|serve_lm)$")
    set(l lm)
  else()
    # A directory no rule knows yet: its own name (the completeness check
    # accepts it, and says so in the configure log).
    string(REGEX REPLACE "/.*" "" l "${d}")
    message(STATUS "labels: ${name} in ${dir}: no rule, labelled '${l}' (tests/labels.cmake)")
  endif()
  set(${out} ${l} PARENT_SCOPE)
endfunction()

function(_ctorch_label_test name)
  get_property(argv GLOBAL PROPERTY CTORCH_TEST_ARGV_${name})
  file(RELATIVE_PATH dir ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  _ctorch_capability(cap "${dir}" ${name})
  set(labels ${cap})
  # A second capability where a test crosses two.
  if(name MATCHES "^(api_json_|ops_json_|bindings_gen_)")
    list(APPEND labels gen)
  endif()
  if(name MATCHES "^(harden_replay_|aoti_check_replay|zip_replay)")
    list(APPEND labels harden)
  endif()
  if(name MATCHES "^(serve_|harden_thread_stress|test_threads_shared)")
    list(APPEND labels threads)
  endif()
  # Cost: what the test starts, from its command and environment.
  # (Of the environment only what the C suites need: CTORCH_TEST_REQUIRES.)
  get_test_property(${name} ENVIRONMENT env)
  set(req "")
  if(env MATCHES "CTORCH_TEST_REQUIRES=([a-z_ ]*)")
    set(req "${CMAKE_MATCH_1}")
  endif()
  set(cmd "${argv}")
  if(cmd MATCHES "(^|;|/)(python[0-9.]*(-asan)?|pyz)(;|$)|\\.py(;|$)|run_fresh\\.sh;pip|load_check\\.sh" OR req MATCHES "py"
     OR name MATCHES "python|pybridge")
    list(APPEND labels python)
  endif()
  if(cmd MATCHES "run_rust\\.sh|run_cargo\\.sh|run_fresh\\.sh;cargo")
    list(APPEND labels cargo)
  endif()
  if(cmd MATCHES "run_go[a-z_]*\\.sh|run_fresh\\.sh;go")
    list(APPEND labels go)
  endif()
  if(cmd MATCHES "run_node\\.sh|node_tsc\\.sh|run_npm\\.sh|run_fresh\\.sh;npm|load_check\\.sh")
    list(APPEND labels node)
  endif()
  if(cmd MATCHES "run_java\\.sh|java_fresh_project\\.sh")
    list(APPEND labels java)
  endif()
  if(name MATCHES "lenet5|resnet_matches|vae|dqn_matches|_dqn_|char_lstm|transformer_|finetune|_train$|ddp|node_leaves")
    list(APPEND labels training)
  endif()
  get_property(cost GLOBAL PROPERTY CTORCH_COST_${name})
  if(cost)
    set_property(TEST ${name} PROPERTY COST ${cost})
    if(cost GREATER_EQUAL 10)
      list(APPEND labels slow)
    endif()
  endif()
  # A time limit for every test that sets none: ctest has no default one
  # (without include(CTest)), so one test that hangs held the whole run until
  # CI's own limit ended it with nothing reported (a CI run whose disk
  # filled). CTORCH_TEST_TIMEOUT seconds, or four times the measured cost
  # where that is more (a cold build or a loaded machine takes longer).
  get_test_property(${name} TIMEOUT limit)
  if(NOT limit)
    set(limit ${CTORCH_TEST_TIMEOUT})
    if(cost)
      string(REGEX REPLACE "\\..*" "" c "${cost}")
      math(EXPR c "${c} * 4")
      if(c GREATER limit)
        set(limit ${c})
      endif()
    endif()
    set_property(TEST ${name} PROPERTY TIMEOUT ${limit})
  endif()
  # A test that starts nothing but its own program and was not measured slow.
  set(_costly python cargo go node java training slow)
  set(_c 0)
  foreach(x ${_costly})
    if(x IN_LIST labels)
      set(_c 1)
    endif()
  endforeach()
  if(NOT _c)
    list(APPEND labels cheap)
  endif()
  list(REMOVE_DUPLICATES labels)
  set_property(TEST ${name} APPEND PROPERTY LABELS ${labels})
  set_property(GLOBAL APPEND PROPERTY CTORCH_LABELLED_TESTS ${name})
endfunction()

# Every test of every directory carries a capability and a cost label (run at
# the end of the top-level directory, after bench/).
function(_ctorch_labels_check_dir dir out)
  get_property(tests DIRECTORY ${dir} PROPERTY TESTS)
  get_property(subs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(s ${subs})
    _ctorch_labels_check_dir(${s} more)
    list(APPEND tests ${more})
  endforeach()
  set(${out} ${tests} PARENT_SCOPE)
endfunction()
function(_ctorch_labels_check)
  _ctorch_labels_check_dir(${PROJECT_SOURCE_DIR} all)
  get_property(done GLOBAL PROPERTY CTORCH_LABELLED_TESTS)
  set(missing "")
  foreach(t ${all})
    if(NOT t IN_LIST done)
      list(APPEND missing ${t})
    endif()
  endforeach()
  if(missing)
    message(FATAL_ERROR "labels: these tests carry no label (added without add_test? see tests/labels.cmake): ${missing}")
  endif()
  # The same check on what ctest will read (see the script mode above).
  _add_test(NAME labels_complete COMMAND ${CMAKE_COMMAND} -DCTEST=${CMAKE_CTEST_COMMAND}
    -P ${PROJECT_SOURCE_DIR}/tests/labels.cmake WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
  set_property(TEST labels_complete PROPERTY LABELS core cheap)
  list(LENGTH all n)
  math(EXPR n "${n} + 1")
  message(STATUS "labels: all ${n} tests labelled")
endfunction()
# (Deferred twice: queued again when the first runs, so it comes after any
# labelling deferred in the top-level directory itself.)
function(_ctorch_labels_check_later)
  cmake_language(DEFER CALL _ctorch_labels_check)
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL _ctorch_labels_check_later)
