#!/usr/bin/python3
"""Generate Nereid's example model repository and its test fixture repositories.

Usage:
    /usr/bin/python3 scripts/gen_test_models.py --examples DIR   # example repository
    /usr/bin/python3 scripts/gen_test_models.py --fixtures DIR   # test repositories
(both flags may be given). Needs Debian's python3-onnx (1.12), numpy and, for the TorchScript
fixtures, python3-torch (scripts/torch_models.py). Every model is
ONNX opset 13, ir_version 8. Output is deterministic (fixed seeds) and idempotent: each model
directory the script writes is deleted and rewritten; nothing else in DIR is touched.

Layout is Triton's: <repo>/<model>/config.pbtxt and <repo>/<model>/<version>/model.onnx.
Shapes below are ONNX shapes; "batch"/"n" are symbolic dimensions.

Examples (--examples DIR):
  simple          INPUT0, INPUT1 int32 [batch,16] -> OUTPUT0 = INPUT0+INPUT1,
                  OUTPUT1 = INPUT0-INPUT1, int32 [batch,16]. max_batch_size 8 (Triton quick start).
  simple_string   same with string tensors holding decimal integers: Cast(string->int32), Add/Sub,
                  Cast(int32->string). TYPE_STRING, max_batch_size 8.
  vardim_fp32     INPUT0 float [batch,n] -> OUTPUT0 = INPUT0 * 2. dims [-1], max_batch_size 8.
  identity_fp32   backend "identity" (no ONNX file; 1/.keep), FP32 dims [-1], max_batch_size 8.
  mlp_fp32        INPUT0 float [batch,256] -> Gemm+Relu 256->2048, Gemm+Relu 2048->2048,
                  Gemm+Relu 2048->1024, Gemm 1024->16 -> OUTPUT0 float [batch,16].
                  max_batch_size 32. He-scaled seeded weights keep activations O(1).
                  6,832,128 weights (27 MB file); FLOPs per sample = 2 * 6,832,128 ~ 13.7 MFLOP,
                  ~109 MFLOP for a batch of 8. Measured with ONNX Runtime 1.30 on one AVX-512
                  EPYC core: ~0.45 ms for batch 1, ~0.6-1.1 ms for batch 8, ~3 ms for batch 32
                  (weight traffic dominates small batches, so batching pays off).
  preprocess_py   backend "python" (1/model.py, docs/python_backend.md): INPUT0 float [batch,n] ->
                  OUTPUT0 = (INPUT0 - mean) / std with mean/std from the config's parameters,
                  max_batch_size 8 with dynamic batching: a Python pre-processing step.
  mlp_pipeline    ensemble (platform "ensemble", no model file; 1/.keep): INPUT float [batch,256]
                  -> identity_fp32 (pre-processing) -> mlp_fp32 -> identity_fp32
                  (post-processing) -> OUTPUT float [batch,16]. max_batch_size 8.

Fixtures (--fixtures DIR), one repository per sub-directory:
  DIR/types       identity_<t> for t in bool uint8 uint16 uint32 uint64 int8 int16 int32 int64
                  fp16 fp32 fp64 string: ONNX Identity INPUT0 [batch,n] -> OUTPUT0, TYPE_<T>,
                  dims [-1], max_batch_size 8.  add_sub_int32_nobatch: `simple` with
                  max_batch_size 0 and ONNX shapes [16].
  DIR/features    reshape_model (ONNX [batch] float, +1; config dims [1] reshape []),
                  autocomplete_full (no config; INPUT0 float [batch,4] -> Relu -> OUTPUT0),
                  autocomplete_partial (config: platform + max_batch_size 2 only; same ONNX),
                  autocomplete_nobatch (no config; X int64 [3,2] -> Identity -> Y),
                  versioned / versioned_latest / versioned_specific (versions 1,2,3 compute
                  OUTPUT0 = INPUT0 + version, int32 [4]; policies all / default / specific [1,3];
                  versioned/ also holds stray dirs abc/ (+100) and 007/ (+7) the server must skip),
                  custom_filename (default_model_filename "custom.onnx", int32 [4] identity),
                  two_instances (float [n] identity, instance_group count 2),
                  slow_identity (see below), identity_multi (identity backend, INT32 + STRING).
  DIR/broken      good (= simple) plus one model per defect: bad_syntax, name_mismatch,
                  negative_batch (-1), no_model_file (empty 1/), not_onnx, dup_input,
                  bad_dims (INPUT0 [-2], INPUT1 [0]), bad_reshape ([16] -> [4,5]),
                  unknown_platform, bad_datatype_for_model (config FP32, model INT32), gpu_kind,
                  no_versions. All but not_onnx/no_model_file carry the valid add/sub model.
  DIR/single_good simple only.
  DIR/decoupled   repeat_int32 (backend "repeat", Triton's QA decoupled model: IN INT32 [-1],
                  DELAY UINT32 [-1], WAIT UINT32 [1] -> OUT INT32 [1], IDX UINT32 [1]);
                  square_int32 (backend "square", Triton's QA decoupled model: IN INT32 [1] ->
                  OUT INT32 [1], N = IN[0] responses of OUT = [N]).
  DIR/management  models for model management tests (see fixture_management): warmup_ok,
                  warmup_bad_size, warmup_bad_input, warmup_escape, labelled, labels_escape,
                  slow_warmup.
  DIR/torch       TorchScript twins for the pytorch backend (scripts/torch_models.py has each
                  module's code; tensor names follow Triton's <name>__<index> unless noted):
                  add_sub_torch (AddSub, INT32 dims [16], max_batch_size 8: `simple`'s twin),
                  named_args_torch (forward(minuend, subtrahend); config names the arguments, in
                  the other order; FP32 [-1]), all_types_torch (ten inputs BOOL..FP64 + STRING,
                  dims [-1], max_batch_size 0), vardim_torch (backend "pytorch", FP32 [-1,-1],
                  x*2), reshape_torch (dims [1] reshape [], x+1), dict_torch (forward takes one
                  Dict[str, Tensor]: x - y, INT64), strings_torch (STRING -> upper-cased STRING
                  + INT64 lengths), parallel_torch (AddSub, 2 instances), shared_torch (AddSub, 3
                  instances sharing weights, every Triton parameter set), threads1_torch /
                  threads2_torch (x*2, FP32 [-1], INTRA_OP_THREAD_COUNT default / 2), mlp_torch (mlp_fp32's
                  twin with the same weights), and three that load but fail per request:
                  wrong_output_dtype_torch (returns FP32, config INT32), matmul4_torch (x @ 3*I4,
                  dims [-1]: a width other than 4 fails in forward), bad_output_shape_torch
                  (returns [batch,2], config [4]); config_order_torch (NamedArgs with inputs
                  first, second and outputs difference, product: neither forward's argument names
                  nor <name>__<index>, so bound in configuration order with Triton's warning);
                  and the TorchScript twins of the sequence
                  accumulators (torch_sequence_fixtures): seq_accum_torch,
                  seq_accum_oldest_torch, seq_accum_state_out_torch, seq_initial_zero_torch.
  DIR/torch_broken good_torch plus one model per defect: not_torchscript, wrong_arg_count,
                  returns_dict, no_config (model.pt, no config.pbtxt), index_out_of_range
                  (INPUT__5), unsupported_type (UINT16), bad_parameter
                  (INTRA_OP_THREAD_COUNT "many"), string_on_tensor (TYPE_STRING on a Tensor
                  argument), no_model_file, unnamed_inputs_count (inputs x, y, z in configuration
                  order for forward(a, b)), unnamed_outputs_count (outputs sum, difference,
                  product in configuration order; forward returns two values).
  DIR/batching    dynamic batcher models (see "Batching fixtures" below).
  DIR/ragged      ragged batching (allow_ragged_batch, batch_input, batch_output), max_batch_size 8,
                  dynamic_batching { preferred [3], max_queue_delay 1 s }: ragged_onnx (IN float
                  ragged; batch inputs IDX accumulated, CNT element count (FP32), Z accumulated
                  with zero, M max element count as shape, S item shape, F item shape flatten;
                  outputs per request [1]: SUM (its elements' sum), ACC, COUNT, COUNTZ (Z[i+1] -
                  Z[i]), MAXC (len(M)), ISHAPE, IFLAT; OUT = 2 * IN scattered by IN's shape),
                  ragged_torch (scripts/torch_models.py RaggedSum: INPUT__0 ragged, INDEX__1
                  accumulated -> SUM__0, OUT__1 scattered), and two that fail to load:
                  ragged_bad_shape_onnx (the model takes IN as [b,n]), ragged_bad_source_onnx
                  (a batch input whose source_input is not an input).
  DIR/stats       models whose statistics the statistics and metrics tests count exactly:
                  simple (as in the examples, with metric_tags team=search and
                  "bad-tag"=x, the second not a valid label), versioned (versions 1,2,3 as in
                  features, policy all), odd_fails (INPUT0 float [n] -> Reshape to [2,-1] ->
                  OUTPUT0 float [n]: identity for an even n, an ONNX Runtime error for an odd n,
                  i.e. a request that passes validation and fails in the backend; max_batch_size 0).
  DIR/sequence    sequence batcher models (accumulators with implicit state, control-input echo
                  models, initial_state from zeros and from a file, growing and wrong-shaped
                  state, two configurations that must fail to load); the table is in
                  tests/fixtures/README.md and each builder's docstring gives its graph.

slow_identity: INPUT0 float [1] -> OUTPUT0 bit-identical to INPUT0, slowly. c = Clip(INPUT0,0,0)+1
(= 1 for every non-NaN input), A0 = Expand(c, [512,512]), A(k+1) = Tanh(MatMul(A(k), W)) for
SLOW_LAYERS = 256 layers sharing one seeded W (512x512, entries ~ N(0, 1/512)), then
OUTPUT0 = INPUT0 + Abs(ReduceSum(A)) * -0.0. Tanh bounds the sum, so the added term is exactly
-0.0 and x + -0.0 == x for every x (including -0.0; NaN stays NaN). The chain depends on the input,
so ONNX Runtime cannot constant-fold it. FLOPs = 256 * 2 * 512^3 ~ 68.7 GFLOP: measured ~285 ms
with one intra-op thread on an AVX-512 EPYC core (~143 ms with two). The config sets Triton's
onnxruntime parameter intra_op_thread_count = 1 so the time does not shrink with the core count.

Batching fixtures (DIR/batching), all with one CPU instance unless noted:
  db_scale        scale2 (OUTPUT0 = INPUT0 * 2, float [batch,n]), dims [-1], max_batch_size 8,
                  dynamic_batching {} (preferred [8] by normalisation, no delay).
  db_scale_nobatch the same ONNX model without dynamic_batching (the unbatched reference).
  db_delay        scale2, dims [-1], max_batch_size 8, dynamic_batching { preferred [4],
                  max_queue_delay 300 ms }.
  db_prio         slow_rows (below), max_batch_size 0, dynamic_batching { priority_levels 2,
                  default_priority_level 2 }.
  db_queue        slow_rows, max_batch_size 0, default_queue_policy { max_queue_size 1 }.
  db_reject       slow_rows, max_batch_size 0, default_queue_policy { timeout_action REJECT,
                  default_timeout 10 s, allow_timeout_override } (requests lower it).
  db_delay_action same with timeout_action DELAY.
  db_ordered      slow_rows, max_batch_size 0, 2 instances, preserve_ordering.
  db_unordered    the same without preserve_ordering (shows what ordering changes).
  db_many_levels  slow_rows, max_batch_size 0, 10^9 priority levels (queues are made on use).
  db_bad_preferred slow_rows (cannot batch), max_batch_size 0, preferred_batch_size [2];
  db_bad_ordering preserve_ordering with priority_levels 2; db_bad_priority
                  default_priority_level 3 of 2 levels: all three must fail to load.

slow_rows: INPUT0 float [n] -> OUTPUT0 bit-identical to INPUT0 (as slow_identity), with cost
proportional to n: A0 = Expand(Clip(INPUT0,0,0)+1 as [n,1], [n,256]), 64 layers of
Tanh(MatMul(A, W256)), OUTPUT0 = INPUT0 + Abs(ReduceSum(A)) * -0.0. n = 1 takes well under a
millisecond; n = 1024 is ~8.6 GFLOP (measured ~40 ms on one AVX-512 EPYC core, ~150 ms for
n = 4096).
"""

import argparse
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
IR_VERSION = 8
ORT = "onnxruntime_onnx"
SLOW_N = 512
SLOW_LAYERS = 256

# name used in model names -> (ONNX element type, Triton data type)
TYPES = {
    "bool": (TensorProto.BOOL, "TYPE_BOOL"),
    "uint8": (TensorProto.UINT8, "TYPE_UINT8"),
    "uint16": (TensorProto.UINT16, "TYPE_UINT16"),
    "uint32": (TensorProto.UINT32, "TYPE_UINT32"),
    "uint64": (TensorProto.UINT64, "TYPE_UINT64"),
    "int8": (TensorProto.INT8, "TYPE_INT8"),
    "int16": (TensorProto.INT16, "TYPE_INT16"),
    "int32": (TensorProto.INT32, "TYPE_INT32"),
    "int64": (TensorProto.INT64, "TYPE_INT64"),
    "fp16": (TensorProto.FLOAT16, "TYPE_FP16"),
    "fp32": (TensorProto.FLOAT, "TYPE_FP32"),
    "fp64": (TensorProto.DOUBLE, "TYPE_FP64"),
    "string": (TensorProto.STRING, "TYPE_STRING"),
}
INT32, INT64, FP32 = TensorProto.INT32, TensorProto.INT64, TensorProto.FLOAT
STRING = TensorProto.STRING


# --------------------------------------------------------------------------- ONNX helpers

def vi(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def make_model(name, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, producer_name="nereid-gen_test_models",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


# --------------------------------------------------------------------------- config helpers

def int_list(values):
    return "[ " + "".join(f"{v}, " for v in values).rstrip(", ") + (" ]" if values else "]")


def tensor_cfg(name, dtype, dims, reshape=None):
    lines = ["  {", f'    name: "{name}"', f"    data_type: {dtype}", f"    dims: {int_list(dims)}"]
    if reshape is not None:
        lines.append(f"    reshape: {{ shape: {int_list(reshape)} }}")
    lines.append("  }")
    return "\n".join(lines)


def config(name, inputs, outputs, max_batch_size, platform=ORT, backend=None,
           instances=1, kind="KIND_CPU", extra=""):
    """Render a Triton config.pbtxt; inputs/outputs are tensor_cfg() blocks."""
    parts = [f'name: "{name}"']
    parts.append(f'backend: "{backend}"' if backend else f'platform: "{platform}"')
    parts.append(f"max_batch_size: {max_batch_size}")
    parts.append("input [\n" + ",\n".join(inputs) + "\n]")
    parts.append("output [\n" + ",\n".join(outputs) + "\n]")
    if instances:
        parts.append(f"instance_group [\n  {{\n    count: {instances}\n    kind: {kind}\n  }}\n]")
    if extra:
        parts.append(extra.strip())
    return "\n".join(parts) + "\n"


# --------------------------------------------------------------------------- file helpers

def fresh_dir(repo, name):
    """Delete and recreate <repo>/<name> so reruns never leave stale files behind."""
    path = os.path.join(repo, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def write_text(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def write_bytes(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_model(repo, name, cfg, models, filename="model.onnx"):
    """Write <repo>/<name>/config.pbtxt (unless cfg is None) and one file per version.

    models maps a version directory name to a ModelProto, raw bytes, or None (empty directory).
    """
    path = fresh_dir(repo, name)
    if cfg is not None:
        write_text(os.path.join(path, "config.pbtxt"), cfg)
    for version, model in models.items():
        vdir = os.path.join(path, str(version))
        os.makedirs(vdir, exist_ok=True)
        if model is None:
            continue
        data = model if isinstance(model, bytes) else model.SerializeToString()
        write_bytes(os.path.join(vdir, filename), data)
    return path


def write_backend_model(repo, name, cfg):
    """A model served by a non-ONNX backend: config plus 1/.keep."""
    path = fresh_dir(repo, name)
    write_text(os.path.join(path, "config.pbtxt"), cfg)
    write_bytes(os.path.join(path, "1", ".keep"), b"")


# --------------------------------------------------------------------------- ONNX models

def add_sub_onnx(shape):
    """OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1 (int32)."""
    return make_model(
        "add_sub",
        [helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
         helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"])],
        [vi("INPUT0", INT32, shape), vi("INPUT1", INT32, shape)],
        [vi("OUTPUT0", INT32, shape), vi("OUTPUT1", INT32, shape)])


def add_sub_string_onnx():
    """String twin of add_sub: parse, compute in int32, format back to decimal strings."""
    shape = ["batch", 16]
    return make_model(
        "add_sub_string",
        [helper.make_node("Cast", ["INPUT0"], ["a"], to=INT32),
         helper.make_node("Cast", ["INPUT1"], ["b"], to=INT32),
         helper.make_node("Add", ["a", "b"], ["sum"]),
         helper.make_node("Sub", ["a", "b"], ["diff"]),
         helper.make_node("Cast", ["sum"], ["OUTPUT0"], to=STRING),
         helper.make_node("Cast", ["diff"], ["OUTPUT1"], to=STRING)],
        [vi("INPUT0", STRING, shape), vi("INPUT1", STRING, shape)],
        [vi("OUTPUT0", STRING, shape), vi("OUTPUT1", STRING, shape)])


def identity_onnx(elem_type, shape, in_name="INPUT0", out_name="OUTPUT0"):
    return make_model("identity", [helper.make_node("Identity", [in_name], [out_name])],
                      [vi(in_name, elem_type, shape)], [vi(out_name, elem_type, shape)])


def scale_fp32_onnx():
    """OUTPUT0 = INPUT0 * 2 with a variable trailing dimension."""
    shape = ["batch", "n"]
    return make_model("scale2", [helper.make_node("Mul", ["INPUT0", "two"], ["OUTPUT0"])],
                      [vi("INPUT0", FP32, shape)], [vi("OUTPUT0", FP32, shape)],
                      [const("two", np.float32(2.0))])


def add_const_onnx(elem_type, np_type, shape, value):
    """OUTPUT0 = INPUT0 + value (scalar constant broadcast)."""
    return make_model("add_const", [helper.make_node("Add", ["INPUT0", "k"], ["OUTPUT0"])],
                      [vi("INPUT0", elem_type, shape)], [vi("OUTPUT0", elem_type, shape)],
                      [const("k", np_type(value))])


def relu_onnx():
    shape = ["batch", 4]
    return make_model("relu", [helper.make_node("Relu", ["INPUT0"], ["OUTPUT0"])],
                      [vi("INPUT0", FP32, shape)], [vi("OUTPUT0", FP32, shape)])


def mlp_onnx(sizes=(256, 2048, 2048, 1024, 16), seed=1234):
    """Gemm(+Relu) stack; He-initialised weights so activations stay O(1)."""
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], [], "INPUT0"
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = (rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        b = (rng.standard_normal(fan_out) * 0.01).astype(np.float32)
        inits += [const(f"W{i}", w), const(f"B{i}", b)]
        if i == len(sizes) - 2:  # last layer: no activation
            nodes.append(helper.make_node("Gemm", [x, f"W{i}", f"B{i}"], ["OUTPUT0"]))
        else:
            nodes += [helper.make_node("Gemm", [x, f"W{i}", f"B{i}"], [f"g{i}"]),
                      helper.make_node("Relu", [f"g{i}"], [f"h{i}"])]
            x = f"h{i}"
    return make_model("mlp", nodes, [vi("INPUT0", FP32, ["batch", sizes[0]])],
                      [vi("OUTPUT0", FP32, ["batch", sizes[-1]])], inits)


def tanh_chain_then_identity(layers):
    """Nodes a0 -> `layers` x Tanh(MatMul(a, W)) -> OUTPUT0 = INPUT0 + Abs(ReduceSum(a)) * -0.0,
    i.e. exactly INPUT0 after work that depends on it (needs initialisers W and neg_zero)."""
    nodes = []
    for k in range(layers):
        nodes += [helper.make_node("MatMul", [f"a{k}", "W"], [f"m{k}"]),
                  helper.make_node("Tanh", [f"m{k}"], [f"a{k + 1}"])]
    return nodes + [helper.make_node("ReduceSum", [f"a{layers}"], ["s"], keepdims=0),
                    helper.make_node("Abs", ["s"], ["abs_s"]),
                    helper.make_node("Mul", ["abs_s", "neg_zero"], ["z"]),
                    helper.make_node("Add", ["INPUT0", "z"], ["OUTPUT0"])]


def slow_identity_onnx(n=SLOW_N, layers=SLOW_LAYERS, seed=42):
    """OUTPUT0 == INPUT0 exactly, after ~layers*2*n^3 FLOPs of input-dependent MatMuls."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
    inits = [const("W", w), const("zero", np.float32(0.0)), const("one", np.float32(1.0)),
             const("neg_zero", np.float32(-0.0)), const("square", np.array([n, n], np.int64))]
    nodes = [helper.make_node("Clip", ["INPUT0", "zero", "zero"], ["clipped"]),
             helper.make_node("Add", ["clipped", "one"], ["c"]),
             helper.make_node("Expand", ["c", "square"], ["a0"])]
    nodes += tanh_chain_then_identity(layers)
    return make_model("slow_identity", nodes, [vi("INPUT0", FP32, [1])],
                      [vi("OUTPUT0", FP32, [1])], inits)


def slow_rows_onnx(width=256, layers=64, seed=7):
    """OUTPUT0 == INPUT0 exactly ([n]); work grows with n (n x width MatMul chain)."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
    inits = [const("W", w), const("zero", np.float32(0.0)), const("one", np.float32(1.0)),
             const("neg_zero", np.float32(-0.0)), const("col", np.array([-1, 1], np.int64)),
             const("row", np.array([1, width], np.int64))]
    nodes = [helper.make_node("Clip", ["INPUT0", "zero", "zero"], ["clipped"]),
             helper.make_node("Add", ["clipped", "one"], ["c"]),
             helper.make_node("Reshape", ["c", "col"], ["c2"]),
             helper.make_node("Expand", ["c2", "row"], ["a0"])]
    nodes += tanh_chain_then_identity(layers)
    return make_model("slow_rows", nodes, [vi("INPUT0", FP32, ["n"])],
                      [vi("OUTPUT0", FP32, ["n"])], inits)


# --------------------------------------------------------------------------- shared configs

def simple_config(name, max_batch_size=8, dtype="TYPE_INT32", inputs=None, **kw):
    """Config of the add/sub model; inputs replaces the two input blocks (broken fixtures)."""
    ins = inputs or [tensor_cfg("INPUT0", dtype, [16]), tensor_cfg("INPUT1", dtype, [16])]
    outs = [tensor_cfg("OUTPUT0", dtype, [16]), tensor_cfg("OUTPUT1", dtype, [16])]
    return config(name, ins, outs, max_batch_size, **kw)


def io1_config(name, dtype, dims, max_batch_size, **kw):
    """One INPUT0 -> one OUTPUT0 of the same type and dims."""
    return config(name, [tensor_cfg("INPUT0", dtype, dims)], [tensor_cfg("OUTPUT0", dtype, dims)],
                  max_batch_size, **kw)


def write_simple(repo, name="simple", cfg=None):
    write_model(repo, name, cfg or simple_config(name), {1: add_sub_onnx(["batch", 16])})


# --------------------------------------------------------------------------- examples

def example_simple_string(repo):
    write_model(repo, "simple_string", simple_config("simple_string", dtype="TYPE_STRING"),
                {1: add_sub_string_onnx()})


def example_vardim_fp32(repo):
    write_model(repo, "vardim_fp32", io1_config("vardim_fp32", "TYPE_FP32", [-1], 8),
                {1: scale_fp32_onnx()})


def example_identity_fp32(repo):
    write_backend_model(repo, "identity_fp32",
                        io1_config("identity_fp32", "TYPE_FP32", [-1], 8, backend="identity"))


def example_mlp_fp32(repo):
    cfg = config("mlp_fp32", [tensor_cfg("INPUT0", "TYPE_FP32", [256])],
                 [tensor_cfg("OUTPUT0", "TYPE_FP32", [16])], 32)
    write_model(repo, "mlp_fp32", cfg, {1: mlp_onnx()})


def ensemble_step(model, input_map, output_map):
    maps = "".join(f'      input_map {{ key: "{k}" value: "{v}" }}\n' for k, v in input_map.items())
    maps += "".join(f'      output_map {{ key: "{k}" value: "{v}" }}\n'
                    for k, v in output_map.items())
    return f'    {{\n      model_name: "{model}"\n      model_version: -1\n{maps}    }}'


def example_mlp_pipeline(repo):
    """Pre-processing -> mlp_fp32 -> post-processing, as one ensemble (identity stands in for
    both processing steps)."""
    steps = [ensemble_step("identity_fp32", {"INPUT0": "INPUT"}, {"OUTPUT0": "preprocessed"}),
             ensemble_step("mlp_fp32", {"INPUT0": "preprocessed"}, {"OUTPUT0": "scores"}),
             ensemble_step("identity_fp32", {"INPUT0": "scores"}, {"OUTPUT0": "OUTPUT"})]
    cfg = config("mlp_pipeline", [tensor_cfg("INPUT", "TYPE_FP32", [256])],
                 [tensor_cfg("OUTPUT", "TYPE_FP32", [16])], 8, platform="ensemble", instances=0,
                 extra="ensemble_scheduling {\n  step [\n" + ",\n".join(steps) + "\n  ]\n}")
    write_backend_model(repo, "mlp_pipeline", cfg)


PREPROCESS_PY = '''"""A pre-processing step in Python: OUTPUT0 = (INPUT0 - mean) / std.

Triton's model.py contract: Nereid runs it unchanged in a stub process (docs/python_backend.md).
"""
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = config.get("parameters", {})
        self.mean = np.float32(params.get("mean", {}).get("string_value", "0"))
        self.std = np.float32(params.get("std", {}).get("string_value", "1"))
        pb_utils.Logger.log_info(f"{args['model_instance_name']}: mean {self.mean}, std {self.std}")

    def execute(self, requests):
        responses = []
        for request in requests:  # one per client request, even when batched together
            x = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            y = ((x - self.mean) / self.std).astype(np.float32)
            responses.append(pb_utils.InferenceResponse([pb_utils.Tensor("OUTPUT0", y)]))
        return responses
'''


def example_preprocess_py(repo):
    cfg = config("preprocess_py", [tensor_cfg("INPUT0", "TYPE_FP32", [-1])],
                 [tensor_cfg("OUTPUT0", "TYPE_FP32", [-1])], 8, backend="python",
                 extra="""dynamic_batching { max_queue_delay_microseconds: 100 }
parameters [
  { key: "mean" value: { string_value: "0.5" } },
  { key: "std" value: { string_value: "0.25" } }
]""")
    path = fresh_dir(repo, "preprocess_py")
    write_text(os.path.join(path, "config.pbtxt"), cfg)
    write_text(os.path.join(path, "1", "model.py"), PREPROCESS_PY)


def write_examples(repo):
    os.makedirs(repo, exist_ok=True)
    write_simple(repo)
    example_simple_string(repo)
    example_vardim_fp32(repo)
    example_identity_fp32(repo)
    example_mlp_fp32(repo)
    example_mlp_pipeline(repo)
    example_preprocess_py(repo)


# --------------------------------------------------------------------------- fixtures: types

def fixture_types(repo):
    for tname, (elem_type, dtype) in TYPES.items():
        name = f"identity_{tname}"
        write_model(repo, name, io1_config(name, dtype, [-1], 8),
                    {1: identity_onnx(elem_type, ["batch", "n"])})
    write_model(repo, "add_sub_int32_nobatch", simple_config("add_sub_int32_nobatch", 0),
                {1: add_sub_onnx([16])})


# --------------------------------------------------------------------------- fixtures: features

def feature_reshape(repo):
    cfg = config("reshape_model", [tensor_cfg("INPUT0", "TYPE_FP32", [1], reshape=[])],
                 [tensor_cfg("OUTPUT0", "TYPE_FP32", [1], reshape=[])], 8)
    write_model(repo, "reshape_model", cfg, {1: add_const_onnx(FP32, np.float32, ["batch"], 1.0)})


def feature_autocomplete(repo):
    write_model(repo, "autocomplete_full", None, {1: relu_onnx()})
    write_model(repo, "autocomplete_partial", f'platform: "{ORT}"\nmax_batch_size: 2\n',
                {1: relu_onnx()})
    write_model(repo, "autocomplete_nobatch", None,
                {1: identity_onnx(INT64, [3, 2], in_name="X", out_name="Y")})


def versioned_onnx(version):
    return add_const_onnx(INT32, np.int32, [4], version)


def feature_versioned(repo):
    models = {v: versioned_onnx(v) for v in (1, 2, 3)}
    policies = {
        "versioned": "version_policy: { all { } }",
        "versioned_latest": "",
        "versioned_specific": "version_policy: { specific { versions: [ 1, 3 ] } }",
    }
    for name, policy in policies.items():
        write_model(repo, name, io1_config(name, "TYPE_INT32", [4], 0, extra=policy), models)
    # Stray directories the server must ignore (non-numeric, zero-prefixed). Distinct
    # constants make a wrongly loaded one visible in results.
    stray = {"abc": versioned_onnx(100), "007": versioned_onnx(7)}
    for vdir, model in stray.items():
        write_bytes(os.path.join(repo, "versioned", vdir, "model.onnx"), model.SerializeToString())


def feature_custom_filename(repo):
    cfg = io1_config("custom_filename", "TYPE_INT32", [4], 0,
                     extra='default_model_filename: "custom.onnx"')
    write_model(repo, "custom_filename", cfg, {1: identity_onnx(INT32, [4])},
                filename="custom.onnx")


def feature_two_instances(repo):
    cfg = io1_config("two_instances", "TYPE_FP32", [-1], 0, instances=2)
    write_model(repo, "two_instances", cfg, {1: identity_onnx(FP32, ["n"])})


def feature_slow_identity(repo):
    extra = ('parameters { key: "intra_op_thread_count" value: { string_value: "1" } }')
    cfg = io1_config("slow_identity", "TYPE_FP32", [1], 0, extra=extra)
    write_model(repo, "slow_identity", cfg, {1: slow_identity_onnx()})


def feature_identity_multi(repo):
    ins = [tensor_cfg("INPUT0", "TYPE_INT32", [-1]), tensor_cfg("INPUT1", "TYPE_STRING", [-1])]
    outs = [tensor_cfg("OUTPUT0", "TYPE_INT32", [-1]), tensor_cfg("OUTPUT1", "TYPE_STRING", [-1])]
    write_backend_model(repo, "identity_multi",
                        config("identity_multi", ins, outs, 0, backend="identity"))


def fixture_features(repo):
    feature_reshape(repo)
    feature_autocomplete(repo)
    feature_versioned(repo)
    feature_custom_filename(repo)
    feature_two_instances(repo)
    feature_slow_identity(repo)
    feature_identity_multi(repo)


# --------------------------------------------------------------------------- fixtures: batching

ONE_THREAD = 'parameters { key: "intra_op_thread_count" value: { string_value: "1" } }'


def fixture_batching(repo):
    scale = scale_fp32_onnx()
    scale_cfg = lambda name, mbs, extra: io1_config(name, "TYPE_FP32", [-1], mbs,  # noqa: E731
                                                    extra=extra)
    write_model(repo, "db_scale", scale_cfg("db_scale", 8, "dynamic_batching { }"), {1: scale})
    write_model(repo, "db_scale_nobatch", scale_cfg("db_scale_nobatch", 8, ""), {1: scale})
    write_model(repo, "db_delay", scale_cfg(
        "db_delay", 8,
        "dynamic_batching {\n  preferred_batch_size: [ 4 ]\n"
        "  max_queue_delay_microseconds: 300000\n}"), {1: scale})
    slow = slow_rows_onnx()
    bad = {
        "db_bad_preferred": "preferred_batch_size: [ 2 ]",
        "db_bad_ordering": "preserve_ordering: true priority_levels: 2 default_priority_level: 1",
        "db_bad_priority": "priority_levels: 2 default_priority_level: 3",
    }
    for name, db in bad.items():
        write_model(repo, name, io1_config(name, "TYPE_FP32", [-1], 0,
                                           extra=f"dynamic_batching {{ {db} }}"), {1: slow})
    policy = ("default_queue_policy {{ timeout_action: {} default_timeout_microseconds: 10000000 "
              "allow_timeout_override: true }}")
    slow_models = {
        "db_prio": (1, "priority_levels: 2\n  default_priority_level: 2"),
        "db_queue": (1, "default_queue_policy { max_queue_size: 1 }"),
        "db_reject": (1, policy.format("REJECT")),
        "db_delay_action": (1, policy.format("DELAY")),
        "db_ordered": (2, "preserve_ordering: true"),
        "db_unordered": (2, ""),
        "db_many_levels": (1, "priority_levels: 1000000000\n  default_priority_level: 1000000000"),
    }
    for name, (instances, db) in slow_models.items():
        cfg = io1_config(name, "TYPE_FP32", [-1], 0, instances=instances,
                         extra=f"dynamic_batching {{\n  {db}\n}}\n{ONE_THREAD}")
        write_model(repo, name, cfg, {1: slow})
# --------------------------------------------------------------------------- fixtures: ragged

def ragged_onnx(in_shape=("n",)):
    """Triton-style ragged model: IN float, flat [n] (all requests' elements one after another),
    and one batch input of every kind; per-request outputs [requests,1] and a scattered OUT."""
    i32, i64, f32 = TensorProto.INT32, TensorProto.INT64, FP32
    n = helper.make_node
    nodes = [
        # SUM: prefix sums of IN with a leading 0, gathered at the request boundaries.
        n("Reshape", ["IN", "minus1"], ["in_flat"]),
        n("CumSum", ["in_flat", "zero64"], ["csum"]),
        n("Concat", ["zero_f", "csum"], ["csum0"], axis=0),
        n("Cast", ["IDX"], ["ends"], to=i64),
        n("Slice", ["Z", "zero64_1", "minus1"], ["z_head"]),
        n("Cast", ["z_head"], ["starts"], to=i64),
        n("Gather", ["csum0", "ends"], ["sum_end"]),
        n("Gather", ["csum0", "starts"], ["sum_start"]),
        n("Sub", ["sum_end", "sum_start"], ["sum_flat"]),
        n("Unsqueeze", ["sum_flat", "axis1"], ["SUM"]),
        # The batch inputs themselves, one row per request.
        n("Unsqueeze", ["IDX", "axis1"], ["ACC"]),
        n("Unsqueeze", ["CNT", "axis1"], ["COUNT"]),
        n("Slice", ["Z", "one64_1", "big"], ["z_tail"]),
        n("Sub", ["z_tail", "z_head"], ["z_diff"]),
        n("Unsqueeze", ["z_diff", "axis1"], ["COUNTZ"]),
        n("Shape", ["M"], ["m_shape"]),
        n("Cast", ["m_shape"], ["m_len"], to=i32),
        n("Shape", ["IDX"], ["r_shape"]),
        n("Concat", ["r_shape", "one64_1"], ["r1"], axis=0),
        n("Expand", ["m_len", "r1"], ["MAXC"]),
        n("Identity", ["S"], ["ISHAPE"]),
        n("Unsqueeze", ["F", "axis1"], ["IFLAT"]),
        # OUT: every element doubled, scattered back by each request's IN shape.
        n("Mul", ["in_flat", "two"], ["OUT"]),
    ]
    inits = [const("zero64", np.int64(0)), const("zero_f", np.zeros([1], np.float32)),
             const("zero64_1", np.array([0], np.int64)), const("one64_1", np.array([1], np.int64)),
             const("minus1", np.array([-1], np.int64)),
             const("big", np.array([2**62], np.int64)), const("axis1", np.array([1], np.int64)),
             const("two", np.float32(2.0))]
    inputs = [vi("IN", f32, list(in_shape)), vi("IDX", i32, ["r"]), vi("CNT", f32, ["r"]),
              vi("Z", i32, ["r1"]), vi("M", i32, ["m"]), vi("S", i32, ["r", "w"]),
              vi("F", i32, ["rw"])]
    outputs = [vi("SUM", f32, ["r", 1]), vi("ACC", i32, ["r", 1]), vi("COUNT", f32, ["r", 1]),
               vi("COUNTZ", i32, ["r", 1]), vi("MAXC", i32, ["r", 1]),
               vi("ISHAPE", i32, ["r", "w"]), vi("IFLAT", i32, ["r", 1]), vi("OUT", f32, ["t"])]
    return make_model("ragged", nodes, inputs, outputs, inits)


RAGGED_BATCHING = ("dynamic_batching {\n  preferred_batch_size: [ 3 ]\n"
                   "  max_queue_delay_microseconds: 1000000\n}")


def ragged_config(name, platform=ORT, inputs=None, outputs=None, batch_inputs=None, source="IN",
                  scatter="OUT"):
    """allow_ragged_batch input `source`, the given batch_input blocks, `scatter` as a
    BATCH_SCATTER_WITH_INPUT_SHAPE batch_output; max_batch_size 8, RAGGED_BATCHING."""
    ins = inputs or [tensor_cfg(source, "TYPE_FP32", [-1]).replace(
        "    dims: [ -1 ]", "    dims: [ -1 ]\n    allow_ragged_batch: true")]
    bis = ",\n".join(
        f'  {{ kind: {k} target_name: "{t}" data_type: {d} source_input: "{source}" }}'
        for k, t, d in batch_inputs)
    extra = (f"batch_input [\n{bis}\n]\n"
             f'batch_output [ {{ kind: BATCH_SCATTER_WITH_INPUT_SHAPE target_name: "{scatter}" '
             f'source_input: "{source}" }} ]\n' + RAGGED_BATCHING)
    return config(name, ins, outputs, 8, platform=platform, extra=extra)


RAGGED_ONNX_BATCH_INPUTS = [
    ("BATCH_ACCUMULATED_ELEMENT_COUNT", "IDX", "TYPE_INT32"),
    ("BATCH_ELEMENT_COUNT", "CNT", "TYPE_FP32"),
    ("BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO", "Z", "TYPE_INT32"),
    ("BATCH_MAX_ELEMENT_COUNT_AS_SHAPE", "M", "TYPE_INT32"),
    ("BATCH_ITEM_SHAPE", "S", "TYPE_INT32"),
    ("BATCH_ITEM_SHAPE_FLATTEN", "F", "TYPE_INT32"),
]


def fixture_ragged(repo):
    outs = ([tensor_cfg(o, t, [1]) for o, t in [
        ("SUM", "TYPE_FP32"), ("ACC", "TYPE_INT32"), ("COUNT", "TYPE_FP32"),
        ("COUNTZ", "TYPE_INT32"), ("MAXC", "TYPE_INT32"), ("ISHAPE", "TYPE_INT32"),
        ("IFLAT", "TYPE_INT32")]] + [tensor_cfg("OUT", "TYPE_FP32", [-1])])
    write_model(repo, "ragged_onnx",
                ragged_config("ragged_onnx", outputs=outs, batch_inputs=RAGGED_ONNX_BATCH_INPUTS),
                {1: ragged_onnx()})
    # Load errors: the model takes IN with a batch dimension; a batch input naming no input.
    write_model(repo, "ragged_bad_shape_onnx",
                ragged_config("ragged_bad_shape_onnx", outputs=outs,
                              batch_inputs=RAGGED_ONNX_BATCH_INPUTS),
                {1: ragged_onnx(in_shape=("b", "n"))})
    bad_source = ragged_config("ragged_bad_source_onnx", outputs=outs,
                               batch_inputs=RAGGED_ONNX_BATCH_INPUTS).replace(
        'target_name: "IDX" data_type: TYPE_INT32 source_input: "IN"',
        'target_name: "IDX" data_type: TYPE_INT32 source_input: "NOPE"')
    write_model(repo, "ragged_bad_source_onnx", bad_source, {1: ragged_onnx()})
    tm = torch_models()
    write_torch(repo, "ragged_torch", tm.RaggedSum(), ragged_config(
        "ragged_torch", platform=TORCH,
        outputs=[tensor_cfg("SUM__0", "TYPE_FP32", [1]), tensor_cfg("OUT__1", "TYPE_FP32", [-1])],
        batch_inputs=[("BATCH_ACCUMULATED_ELEMENT_COUNT", "INDEX__1", "TYPE_INT32")],
        source="INPUT__0", scatter="OUT__1"))


# --------------------------------------------------------------------------- fixtures: stats

def odd_fails_onnx():
    """Identity on an even element count; Reshape [2,-1] fails at run time on an odd one."""
    return make_model(
        "odd_fails",
        [helper.make_node("Reshape", ["INPUT0", "pairs"], ["halves"]),
         helper.make_node("Reshape", ["halves", "flat"], ["OUTPUT0"])],
        [vi("INPUT0", FP32, ["n"])], [vi("OUTPUT0", FP32, ["n"])],
        [const("pairs", np.array([2, -1], dtype=np.int64)),
         const("flat", np.array([-1], dtype=np.int64))])


def fixture_stats(repo):
    tags = 'metric_tags { key: "team" value: "search" }\nmetric_tags { key: "bad-tag" value: "x" }'
    write_simple(repo, "simple", simple_config("simple", extra=tags))
    models = {v: versioned_onnx(v) for v in (1, 2, 3)}
    write_model(repo, "versioned",
                io1_config("versioned", "TYPE_INT32", [4], 0, extra="version_policy: { all { } }"),
                models)
    write_model(repo, "odd_fails", io1_config("odd_fails", "TYPE_FP32", [-1], 0),
                {1: odd_fails_onnx()})


# --------------------------------------------------------------------------- fixtures: sequences

def accumulator_onnx(with_start=True):
    """The seed's accumulator: OUTPUT = OUTPUT_STATE = INPUT on START, else INPUT + INPUT_STATE
    (int32 [batch,1]). Without START (initial_state models) always INPUT + INPUT_STATE."""
    b = ["batch", 1]
    nodes = [helper.make_node("Add", ["INPUT", "INPUT_STATE"], ["sum"])]
    inputs = [vi("INPUT", TensorProto.INT32, b), vi("INPUT_STATE", TensorProto.INT32, b)]
    if with_start:
        nodes += [helper.make_node("Cast", ["START"], ["start_b"], to=TensorProto.BOOL),
                  helper.make_node("Where", ["start_b", "INPUT", "sum"], ["acc"])]
        inputs.append(vi("START", TensorProto.INT32, b))
    else:
        nodes.append(helper.make_node("Identity", ["sum"], ["acc"]))
    nodes += [helper.make_node("Identity", ["acc"], ["OUTPUT"]),
              helper.make_node("Identity", ["acc"], ["OUTPUT_STATE"])]
    return make_model("accumulator", nodes, inputs,
                      [vi("OUTPUT", TensorProto.INT32, b), vi("OUTPUT_STATE", TensorProto.INT32, b)])


def growing_state_onnx():
    """STATE_OUT = Concat(STATE_IN, INPUT) along axis 1 (int32 [batch,n]): the state grows by one
    element a request; LENGTH int64 [batch,1] = n of STATE_IN, SUM int32 [batch,1] its sum."""
    nodes = [
        helper.make_node("Concat", ["STATE_IN", "INPUT"], ["STATE_OUT"], axis=1),
        helper.make_node("Shape", ["STATE_IN"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["len1"], axis=0),  # [1]
        helper.make_node("Shape", ["INPUT"], ["in_shape"]),
        helper.make_node("Expand", ["len1", "in_shape"], ["LENGTH"]),
        helper.make_node("ReduceSum", ["STATE_IN", "axes"], ["SUM"], keepdims=1),
    ]
    return make_model("growing_state", nodes,
                      [vi("INPUT", TensorProto.INT32, ["batch", 1]),
                       vi("STATE_IN", TensorProto.INT32, ["batch", "n"])],
                      [vi("STATE_OUT", TensorProto.INT32, ["batch", "m"]),
                       vi("LENGTH", TensorProto.INT64, ["batch", 1]),
                       vi("SUM", TensorProto.INT32, ["batch", 1])],
                      [const("one", np.array([1], np.int64)), const("axes", np.array([1], np.int64))])


def bad_state_onnx():
    """OUTPUT_STATE = Concat(INPUT_STATE, INPUT_STATE) along axis 1: twice as wide as configured."""
    nodes = [helper.make_node("Concat", ["INPUT_STATE", "INPUT_STATE"], ["OUTPUT_STATE"], axis=1),
             helper.make_node("Identity", ["INPUT"], ["OUTPUT"])]
    return make_model("bad_state", nodes,
                      [vi("INPUT", TensorProto.INT32, ["batch", 1]),
                       vi("INPUT_STATE", TensorProto.INT32, ["batch", "n"])],
                      [vi("OUTPUT", TensorProto.INT32, ["batch", 1]),
                       vi("OUTPUT_STATE", TensorProto.INT32, ["batch", "m"])])


ELEM = {"TYPE_INT32": TensorProto.INT32, "TYPE_FP32": TensorProto.FLOAT,
        "TYPE_BOOL": TensorProto.BOOL, "TYPE_UINT64": TensorProto.UINT64,
        "TYPE_INT64": TensorProto.INT64, "TYPE_UINT32": TensorProto.UINT32,
        "TYPE_STRING": TensorProto.STRING}


def controls_onnx(types):
    """Echoes every control input: OUT_<name> = <name> ([batch,1], its type), OUTPUT = INPUT.
    With a numeric CORRID also DUP int32 [batch,1] (rows of the batch sharing this row's CORRID)
    and BATCH int64 [batch,1] (the batch size the row ran in), and with READY also READY_ROWS
    int32 [batch,1] (rows of the batch whose READY is true: fewer than BATCH when Direct filled
    empty slots)."""
    b = ["batch", 1]
    nodes = [helper.make_node("Identity", ["INPUT"], ["OUTPUT"])]
    inputs = [vi("INPUT", TensorProto.INT32, b)]
    outputs = [vi("OUTPUT", TensorProto.INT32, b)]
    for name, t in types.items():
        inputs.append(vi(name, ELEM[t], b))
        nodes.append(helper.make_node("Identity", [name], ["OUT_" + name]))
        outputs.append(vi("OUT_" + name, ELEM[t], b))
    inits = []
    if types.get("CORRID", "TYPE_STRING") != "TYPE_STRING":
        nodes += [
            helper.make_node("Cast", ["CORRID"], ["cid"], to=TensorProto.DOUBLE),
            helper.make_node("Transpose", ["cid"], ["cid_t"], perm=[1, 0]),
            helper.make_node("Equal", ["cid", "cid_t"], ["same"]),
            helper.make_node("Cast", ["same"], ["same_i"], to=TensorProto.INT32),
            helper.make_node("ReduceSum", ["same_i", "axes"], ["DUP"], keepdims=1),
            helper.make_node("Shape", ["INPUT"], ["in_shape"]),
            helper.make_node("Gather", ["in_shape", "zero"], ["rows"], axis=0),
            helper.make_node("Expand", ["rows", "in_shape"], ["BATCH"]),
        ]
        inits = [const("axes", np.array([1], np.int64)), const("zero", np.array([0], np.int64))]
        outputs += [vi("DUP", TensorProto.INT32, b), vi("BATCH", TensorProto.INT64, b)]
        if "READY" in types:  # READY_ROWS: rows of the batch whose READY is true
            nodes += [
                helper.make_node("Cast", ["READY"], ["ready_b"], to=TensorProto.BOOL),
                helper.make_node("Cast", ["ready_b"], ["ready_i"], to=TensorProto.INT32),
                helper.make_node("ReduceSum", ["ready_i", "zero"], ["ready_n"], keepdims=1),
                helper.make_node("Expand", ["ready_n", "in_shape"], ["READY_ROWS"]),
            ]
            outputs.append(vi("READY_ROWS", TensorProto.INT32, b))
    return make_model("controls", nodes, inputs, outputs, inits)


def control_block(name, kind, t, values=None):
    if kind == "CONTROL_SEQUENCE_CORRID":
        body = f"data_type: {t}"
    else:
        field = {"TYPE_INT32": "int32_false_true", "TYPE_FP32": "fp32_false_true",
                 "TYPE_BOOL": "bool_false_true"}[t]
        body = f"{field}: {int_list(values)}"
    return f'  control_input {{ name: "{name}" control {{ kind: {kind} {body} }} }}'


def seq_config(name, max_batch_size, inputs, outputs, strategy="direct { }", controls=(),
               states=(), idle_us=0, instances=1, platform=ORT):
    lines = ["sequence_batching {"]
    if idle_us:
        lines.append(f"  max_sequence_idle_microseconds: {idle_us}")
    lines.append("  " + strategy)
    lines += list(controls)
    lines += list(states)
    lines.append("}")
    return config(name, inputs, outputs, max_batch_size, platform=platform, instances=instances,
                  extra="\n".join(lines))


def state_block(inp, out, dims, initial=""):
    return (f'  state {{ input_name: "{inp}" output_name: "{out}" data_type: TYPE_INT32 '
            f"dims: {int_list(dims)} {initial}}}")


START_INT32 = control_block("START", "CONTROL_SEQUENCE_START", "TYPE_INT32", [0, 1])


def fixture_sequence(repo):
    i32 = lambda n: tensor_cfg(n, "TYPE_INT32", [1])  # noqa: E731
    acc = accumulator_onnx()
    acc_state = state_block("INPUT_STATE", "OUTPUT_STATE", [1])
    accumulators = {
        # name: (max_batch_size, strategy, instances, idle_us, extra outputs)
        "seq_accum": (4, "direct { }", 1, 0, []),
        "seq_accum_one_slot": (1, "direct { }", 1, 0, []),
        "seq_accum_two_instances": (2, "direct { }", 2, 0, []),
        "seq_accum_idle": (2, "direct { }", 1, 300000, []),
        "seq_accum_oldest": (4, "oldest { max_candidate_sequences: 4 }", 1, 0, []),
        "seq_accum_state_out": (4, "direct { }", 1, 0, [i32("OUTPUT_STATE")]),
        "seq_accum_util": (4, "direct { max_queue_delay_microseconds: 300000 "
                              "minimum_slot_utilization: 0.5 }", 1, 0, []),
    }
    for name, (mbs, strategy, inst, idle, extra) in accumulators.items():
        cfg = seq_config(name, mbs, [i32("INPUT")], [i32("OUTPUT")] + extra, strategy,
                         [START_INT32], [acc_state], idle, inst)
        write_model(repo, name, cfg, {1: acc})
    no_start = accumulator_onnx(with_start=False)
    zero = state_block("INPUT_STATE", "OUTPUT_STATE", [-1],
                       "initial_state { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } ")
    write_model(repo, "seq_initial_zero", seq_config("seq_initial_zero", 4, [i32("INPUT")],
                                                     [i32("OUTPUT")], states=[zero]),
                {1: no_start})
    from_file = state_block("INPUT_STATE", "OUTPUT_STATE", [1],
                            'initial_state { data_type: TYPE_INT32 dims: [ 1 ] '
                            'data_file: "hundred" } ')
    path = write_model(repo, "seq_initial_file", seq_config(
        "seq_initial_file", 4, [i32("INPUT")], [i32("OUTPUT")], states=[from_file]),
        {1: no_start})
    write_bytes(os.path.join(path, "initial_state", "hundred"), np.int32(100).tobytes())
    escape = state_block("INPUT_STATE", "OUTPUT_STATE", [1],
                         'initial_state { data_type: TYPE_INT32 dims: [ 1 ] '
                         'data_file: "../config.pbtxt" } ')
    write_model(repo, "seq_bad_initial_path", seq_config(
        "seq_bad_initial_path", 4, [i32("INPUT")], [i32("OUTPUT")], states=[escape]),
        {1: no_start})
    grow = state_block("STATE_IN", "STATE_OUT", [-1])
    write_model(repo, "seq_growing_state", seq_config(
        "seq_growing_state", 4, [i32("INPUT")],
        [tensor_cfg("LENGTH", "TYPE_INT64", [1]), i32("SUM")], states=[grow]),
        {1: growing_state_onnx()})
    write_model(repo, "seq_bad_state", seq_config(
        "seq_bad_state", 4, [i32("INPUT")], [i32("OUTPUT")],
        states=[state_block("INPUT_STATE", "OUTPUT_STATE", [1])]), {1: bad_state_onnx()})
    # Control echo models: every kind, every false/true type and every CORRID type.
    echo = {
        "seq_controls": ({"START": ("TYPE_INT32", [0, 1]), "END": ("TYPE_FP32", [0, 1]),
                          "READY": ("TYPE_BOOL", ["false", "true"]), "CORRID": ("TYPE_UINT64", None)},
                         "direct { }"),
        "seq_controls_alt": ({"START": ("TYPE_FP32", [2, 3]), "END": ("TYPE_BOOL", ["false", "true"]),
                              "READY": ("TYPE_INT32", [5, 7]), "CORRID": ("TYPE_INT64", None)},
                             "direct { }"),
        "seq_controls_oldest": ({"START": ("TYPE_INT32", [0, 1]), "END": ("TYPE_INT32", [0, 1]),
                                 "READY": ("TYPE_INT32", [0, 1]), "CORRID": ("TYPE_UINT64", None)},
                                "oldest { max_candidate_sequences: 8 preferred_batch_size: [ 4 ] "
                                "max_queue_delay_microseconds: 500000 }"),
        "seq_corrid_uint32": ({"CORRID": ("TYPE_UINT32", None)}, "direct { }"),
        "seq_corrid_int32": ({"CORRID": ("TYPE_INT32", None)}, "direct { }"),
        "seq_corrid_string": ({"CORRID": ("TYPE_STRING", None)}, "direct { }"),
    }
    kinds = {"START": "CONTROL_SEQUENCE_START", "END": "CONTROL_SEQUENCE_END",
             "READY": "CONTROL_SEQUENCE_READY", "CORRID": "CONTROL_SEQUENCE_CORRID"}
    for name, (controls, strategy) in echo.items():
        types = {k: t for k, (t, _) in controls.items()}
        outs = [i32("OUTPUT")] + [tensor_cfg("OUT_" + k, t, [1]) for k, t in types.items()]
        if types.get("CORRID", "TYPE_STRING") != "TYPE_STRING":
            outs += [i32("DUP"), tensor_cfg("BATCH", "TYPE_INT64", [1])]
            if "READY" in types:
                outs.append(i32("READY_ROWS"))
        blocks = [control_block(k, kinds[k], t, v) for k, (t, v) in controls.items()]
        write_model(repo, name, seq_config(name, 4, [i32("INPUT")], outs, strategy, blocks),
                    {1: controls_onnx(types)})
    dup_kind = [START_INT32, control_block("START2", "CONTROL_SEQUENCE_START", "TYPE_INT32",
                                           [0, 1])]
    write_model(repo, "seq_bad_two_starts", seq_config(
        "seq_bad_two_starts", 4, [i32("INPUT")], [i32("OUTPUT")], controls=dup_kind,
        states=[acc_state]), {1: acc})


# --------------------------------------------------------------------------- fixtures: broken

def broken_configs():
    """Model name -> config.pbtxt text, one defect each (the model file is the good add/sub)."""
    int32 = lambda name, dims, **kw: tensor_cfg(name, "TYPE_INT32", dims, **kw)  # noqa: E731
    return {
        "bad_syntax": 'name: "bad_syntax"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8 {{ [\n',
        "name_mismatch": simple_config("other_name"),
        "negative_batch": simple_config("negative_batch", max_batch_size=-1),
        "dup_input": simple_config("dup_input", inputs=[int32("INPUT0", [16])] * 2),
        "bad_dims": simple_config("bad_dims", inputs=[int32("INPUT0", [-2]), int32("INPUT1", [0])]),
        "bad_reshape": simple_config("bad_reshape", inputs=[int32("INPUT0", [16], reshape=[4, 5]),
                                                            int32("INPUT1", [16])]),
        "unknown_platform": simple_config("unknown_platform", platform="tensorflow_graphdef_nope"),
        "bad_datatype_for_model": simple_config("bad_datatype_for_model", dtype="TYPE_FP32"),
        "gpu_kind": simple_config("gpu_kind", kind="KIND_GPU"),
    }


def fixture_broken(repo):
    write_simple(repo, "good")
    for name, cfg in broken_configs().items():
        write_model(repo, name, cfg, {1: add_sub_onnx(["batch", 16])})
    write_model(repo, "no_model_file", simple_config("no_model_file"), {1: None})
    write_model(repo, "not_onnx", simple_config("not_onnx"), {1: b"this is not an onnx model\n"})
    write_model(repo, "no_versions", simple_config("no_versions"), {})


# --------------------------------------------------------------------------- fixtures: management

def warmup_block(samples):
    """model_warmup [...] from (name, batch_size, count, {input: (dims, data)}) tuples, where data
    is "zero", "random" or a file name under warmup/."""
    out = []
    for name, batch, count, inputs in samples:
        lines = ["  {", f'    name: "{name}"', f"    batch_size: {batch}"]
        for key, (dims, data) in inputs.items():
            choice = {"zero": "zero_data: true", "random": "random_data: true"}.get(
                data, f'input_data_file: "{data}"')
            lines.append(f'    inputs {{ key: "{key}" value: {{ data_type: TYPE_INT32 '
                         f"dims: {int_list(dims)} {choice} }} }}")
        lines += [f"    count: {count}", "  }"]
        out.append("\n".join(lines))
    return "model_warmup [\n" + ",\n".join(out) + "\n]\n"


GOOD_WARMUP = [("zeros", 2, 2, {"INPUT0": ([16], "zero"), "INPUT1": ([16], "random")}),
               ("from_file", 1, 1, {"INPUT0": ([16], "input0.bin"),
                                    "INPUT1": ([16], "input0.bin")})]


def write_warmup_model(repo, name, samples, warmup_files):
    write_model(repo, name, simple_config(name, extra=warmup_block(samples)),
                {1: add_sub_onnx(["batch", 16])})
    for fname, data in warmup_files.items():
        path = os.path.join(repo, name, "warmup", fname)
        if isinstance(data, tuple):  # ("symlink", target)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.symlink(data[1], path)
        else:
            write_bytes(path, data)


def fixture_management(repo):
    """warmup_ok: `simple` with two warmup samples (zeros/random, batch 2, count 2; and
    warmup/input0.bin = int32 0..15). warmup_bad_size: the same with a 60-byte input0.bin.
    warmup_bad_input: a sample whose INPUT0 dims [15] do not match the model. warmup_escape:
    warmup/input0.bin is a symlink to /etc/hostname (outside the model). labelled: FP32 identity
    [batch,5] whose OUTPUT0 has label_filename labels.txt (cat dog bird fish frog).
    labels_escape: labels.txt is a symlink to /etc/hostname. slow_warmup: slow_identity with
    versions 1 and 2 (policy all) and a warmup sample run 3 times (~1 s per version)."""
    good_bin = np.arange(16, dtype=np.int32).tobytes()
    write_warmup_model(repo, "warmup_ok", GOOD_WARMUP, {"input0.bin": good_bin})
    write_warmup_model(repo, "warmup_bad_size", GOOD_WARMUP, {"input0.bin": good_bin[:60]})
    write_warmup_model(repo, "warmup_bad_input",
                       [("wrong_dims", 1, 1, {"INPUT0": ([15], "zero"), "INPUT1": ([15], "zero")})],
                       {})
    write_warmup_model(repo, "warmup_escape", GOOD_WARMUP,
                       {"input0.bin": ("symlink", "/etc/hostname")})
    labels = "cat\ndog\nbird\nfish\nfrog\n"
    for name, link in (("labelled", False), ("labels_escape", True)):
        cfg = config(name, [tensor_cfg("INPUT0", "TYPE_FP32", [5])],
                     [tensor_cfg("OUTPUT0", "TYPE_FP32", [5]).replace(
                         "    dims", '    label_filename: "labels.txt"\n    dims')], 8)
        write_model(repo, name, cfg, {1: identity_onnx(FP32, ["batch", 5])})
        path = os.path.join(repo, name, "labels.txt")
        if link:
            os.symlink("/etc/hostname", path)
        else:
            write_text(path, labels)
    slow_warm = ('version_policy: { all { } }\n'
                 'parameters { key: "intra_op_thread_count" value: { string_value: "1" } }\n'
                 'model_warmup [ { name: "slow" batch_size: 1 count: 3 inputs { key: "INPUT0" '
                 'value: { data_type: TYPE_FP32 dims: [ 1 ] zero_data: true } } } ]')
    cfg = io1_config("slow_warmup", "TYPE_FP32", [1], 0, extra=slow_warm)
    write_model(repo, "slow_warmup", cfg, {1: slow_identity_onnx(), 2: slow_identity_onnx()})
# --------------------------------------------------------------------------- fixtures: torch

TORCH = "pytorch_libtorch"
TORCH_TYPES = ["TYPE_BOOL", "TYPE_UINT8", "TYPE_INT8", "TYPE_INT16", "TYPE_INT32", "TYPE_INT64",
               "TYPE_FP16", "TYPE_FP32", "TYPE_FP64", "TYPE_STRING"]


def torch_models():
    import torch_models as tm  # python3-torch: imported only when TorchScript fixtures are written
    return tm


def indexed(prefix, dtype, dims, count, **kw):
    return [tensor_cfg(f"{prefix}__{i}", dtype, dims, **kw) for i in range(count)]


def torch_param(key, value):
    return f'parameters {{ key: "{key}" value: {{ string_value: "{value}" }} }}'


def write_torch(repo, name, module, cfg):
    write_model(repo, name, cfg, {1: torch_models().scripted_bytes(module)}, filename="model.pt")


def add_sub_torch_config(name, dtype="TYPE_INT32", inputs=None, **kw):
    ins = inputs or indexed("INPUT", dtype, [16], 2)
    return config(name, ins, indexed("OUTPUT", dtype, [16], 2), 8, platform=TORCH, **kw)


def fixture_torch(repo):
    tm = torch_models()
    write_torch(repo, "add_sub_torch", tm.AddSub(), add_sub_torch_config("add_sub_torch"))
    write_torch(repo, "named_args_torch", tm.NamedArgs(), config(
        "named_args_torch", [tensor_cfg("subtrahend", "TYPE_FP32", [-1]),
                             tensor_cfg("minuend", "TYPE_FP32", [-1])],
        indexed("OUTPUT", "TYPE_FP32", [-1], 2), 0, platform=TORCH))
    write_torch(repo, "all_types_torch", tm.AllTypes(), config(
        "all_types_torch", [tensor_cfg(f"INPUT__{i}", t, [-1]) for i, t in enumerate(TORCH_TYPES)],
        [tensor_cfg(f"OUTPUT__{i}", t, [-1]) for i, t in enumerate(TORCH_TYPES)], 0,
        platform=TORCH))
    write_torch(repo, "vardim_torch", tm.Scale2(), config(
        "vardim_torch", [tensor_cfg("INPUT__0", "TYPE_FP32", [-1, -1])],
        [tensor_cfg("OUTPUT__0", "TYPE_FP32", [-1, -1])], 8, backend="pytorch"))
    write_torch(repo, "reshape_torch", tm.AddOne(), config(
        "reshape_torch", [tensor_cfg("INPUT__0", "TYPE_FP32", [1], reshape=[])],
        [tensor_cfg("OUTPUT__0", "TYPE_FP32", [1], reshape=[])], 8, platform=TORCH))
    write_torch(repo, "dict_torch", tm.DictInput(), config(
        "dict_torch", [tensor_cfg("x", "TYPE_INT64", [-1]), tensor_cfg("y", "TYPE_INT64", [-1])],
        [tensor_cfg("OUTPUT__0", "TYPE_INT64", [-1])], 0, platform=TORCH))
    write_torch(repo, "strings_torch", tm.Strings(), config(
        "strings_torch", [tensor_cfg("INPUT__0", "TYPE_STRING", [-1])],
        [tensor_cfg("OUTPUT__0", "TYPE_STRING", [-1]), tensor_cfg("OUTPUT__1", "TYPE_INT64", [-1])],
        0, platform=TORCH))
    write_torch(repo, "parallel_torch", tm.AddSub(),
                add_sub_torch_config("parallel_torch", instances=2))
    shared = "\n".join(torch_param(k, v) for k, v in [
        ("ENABLE_WEIGHT_SHARING", "true"), ("DISABLE_OPTIMIZED_EXECUTION", "true"),
        ("INFERENCE_MODE", "false"), ("ENABLE_JIT_EXECUTOR", "false"),
        ("ENABLE_JIT_PROFILING", "false"), ("ENABLE_TENSOR_FUSER", "false"),
        ("INTRA_OP_THREAD_COUNT", "2"), ("INTER_OP_THREAD_COUNT", "1")])
    write_torch(repo, "shared_torch", tm.AddSub(),
                add_sub_torch_config("shared_torch", instances=3, extra=shared))
    write_torch(repo, "threads2_torch", tm.Scale2(), config(
        "threads2_torch", [tensor_cfg("INPUT__0", "TYPE_FP32", [-1])],
        [tensor_cfg("OUTPUT__0", "TYPE_FP32", [-1])], 0, platform=TORCH,
        extra=torch_param("INTRA_OP_THREAD_COUNT", "2")))
    write_torch(repo, "threads1_torch", tm.Scale2(), config(
        "threads1_torch", [tensor_cfg("INPUT__0", "TYPE_FP32", [-1])],
        [tensor_cfg("OUTPUT__0", "TYPE_FP32", [-1])], 0, platform=TORCH))
    write_torch(repo, "mlp_torch", tm.Mlp(), config(
        "mlp_torch", [tensor_cfg("INPUT__0", "TYPE_FP32", [256])],
        [tensor_cfg("OUTPUT__0", "TYPE_FP32", [16])], 32, platform=TORCH))
    write_torch(repo, "wrong_output_dtype_torch", tm.ToFloat(), config(
        "wrong_output_dtype_torch", [tensor_cfg("INPUT__0", "TYPE_INT32", [-1])],
        [tensor_cfg("OUTPUT__0", "TYPE_INT32", [-1])], 8, platform=TORCH))
    write_torch(repo, "matmul4_torch", tm.MatMul4(), config(
        "matmul4_torch", [tensor_cfg("INPUT__0", "TYPE_FP32", [-1])],
        [tensor_cfg("OUTPUT__0", "TYPE_FP32", [4])], 8, platform=TORCH))
    write_torch(repo, "bad_output_shape_torch", tm.TakeTwo(), config(
        "bad_output_shape_torch", [tensor_cfg("INPUT__0", "TYPE_FP32", [4])],
        [tensor_cfg("OUTPUT__0", "TYPE_FP32", [4])], 8, platform=TORCH))
    write_torch(repo, "config_order_torch", tm.NamedArgs(), config(
        "config_order_torch", [tensor_cfg("first", "TYPE_FP32", [-1]),
                               tensor_cfg("second", "TYPE_FP32", [-1])],
        [tensor_cfg("difference", "TYPE_FP32", [-1]), tensor_cfg("product", "TYPE_FP32", [-1])],
        8, platform=TORCH))
    torch_sequence_fixtures(repo, tm)


def torch_sequence_fixtures(repo, tm):
    """TorchScript twins of the `sequence` repository's accumulators: the control input and the
    state tensors are ordinary `<name>__<index>` forward arguments and returned values."""
    i32 = lambda n: tensor_cfg(n, "TYPE_INT32", [1])  # noqa: E731
    start = control_block("START__1", "CONTROL_SEQUENCE_START", "TYPE_INT32", [0, 1])
    state = state_block("STATE__2", "OUTPUT_STATE__1", [1])
    acc = tm.scripted_bytes(tm.Accumulator())
    accumulators = {
        # name: (strategy, extra outputs); all max_batch_size 4, one instance (seq_accum's twins)
        "seq_accum_torch": ("direct { }", []),
        "seq_accum_oldest_torch": ("oldest { max_candidate_sequences: 4 }", []),
        "seq_accum_state_out_torch": ("direct { }", [i32("OUTPUT_STATE__1")]),
    }
    for name, (strategy, extra) in accumulators.items():
        cfg = seq_config(name, 4, [i32("INPUT__0")], [i32("OUTPUT__0")] + extra, strategy,
                         [start], [state], platform=TORCH)
        write_model(repo, name, cfg, {1: acc}, filename="model.pt")
    zero = state_block("STATE__1", "OUTPUT_STATE__1", [-1],
                       "initial_state { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } ")
    cfg = seq_config("seq_initial_zero_torch", 4, [i32("INPUT__0")], [i32("OUTPUT__0")],
                     states=[zero], platform=TORCH)
    write_model(repo, "seq_initial_zero_torch", cfg,
                {1: tm.scripted_bytes(tm.AccumulatorNoStart())}, filename="model.pt")


def fixture_torch_broken(repo):
    tm = torch_models()
    add_sub = tm.scripted_bytes(tm.AddSub())
    int32 = lambda name, dims: tensor_cfg(name, "TYPE_INT32", dims)  # noqa: E731
    configs = {
        "good_torch": (add_sub, add_sub_torch_config("good_torch")),
        "not_torchscript": (b"this is not a TorchScript archive\n",
                            add_sub_torch_config("not_torchscript")),
        "wrong_arg_count": (add_sub, add_sub_torch_config(
            "wrong_arg_count", inputs=indexed("INPUT", "TYPE_INT32", [16], 3))),
        "returns_dict": (tm.scripted_bytes(tm.ReturnsDict()), config(
            "returns_dict", [int32("INPUT__0", [4])], [int32("OUTPUT__0", [4])], 0,
            platform=TORCH)),
        "no_config": (add_sub, None),
        "index_out_of_range": (add_sub, add_sub_torch_config(
            "index_out_of_range", inputs=[int32("INPUT__0", [16]), int32("INPUT__5", [16])])),
        "unsupported_type": (add_sub, add_sub_torch_config("unsupported_type",
                                                           dtype="TYPE_UINT16")),
        "bad_parameter": (add_sub, add_sub_torch_config(
            "bad_parameter", extra=torch_param("INTRA_OP_THREAD_COUNT", "many"))),
        "string_on_tensor": (add_sub, config(
            "string_on_tensor", indexed("INPUT", "TYPE_STRING", [-1], 2),
            indexed("OUTPUT", "TYPE_STRING", [-1], 2), 0, platform=TORCH)),
        "no_model_file": (None, add_sub_torch_config("no_model_file")),
        "unnamed_inputs_count": (add_sub, add_sub_torch_config(
            "unnamed_inputs_count",
            inputs=[int32("x", [16]), int32("y", [16]), int32("z", [16])])),
        "unnamed_outputs_count": (add_sub, config(
            "unnamed_outputs_count", indexed("INPUT", "TYPE_INT32", [16], 2),
            [int32("sum", [16]), int32("difference", [16]), int32("product", [16])], 8,
            platform=TORCH)),
    }
    for name, (model, cfg) in configs.items():
        write_model(repo, name, cfg, {1: model}, filename="model.pt")


# --------------------------------------------------------------------------- entry point

def fixture_decoupled(repo):
    """Triton's QA decoupled models, configured as Triton's qa/L0_decoupled writes them."""
    decoupled = "model_transaction_policy {\n  decoupled: true\n}"
    write_backend_model(repo, "repeat_int32", config(
        "repeat_int32",
        [tensor_cfg("IN", "TYPE_INT32", [-1]), tensor_cfg("DELAY", "TYPE_UINT32", [-1]),
         tensor_cfg("WAIT", "TYPE_UINT32", [1])],
        [tensor_cfg("OUT", "TYPE_INT32", [1]), tensor_cfg("IDX", "TYPE_UINT32", [1])],
        0, backend="repeat", extra=decoupled))
    write_backend_model(repo, "square_int32", config(
        "square_int32", [tensor_cfg("IN", "TYPE_INT32", [1])],
        [tensor_cfg("OUT", "TYPE_INT32", [1])], 0, backend="square", extra=decoupled))
    # repeat under the batchers (issue 17 item 6): with max_batch_size > 0 each request of batch
    # size 1 is one row of an execution and gets its own sender.
    repeat_io = (
        [tensor_cfg("IN", "TYPE_INT32", [-1]), tensor_cfg("DELAY", "TYPE_UINT32", [-1]),
         tensor_cfg("WAIT", "TYPE_UINT32", [1])],
        [tensor_cfg("OUT", "TYPE_INT32", [1]), tensor_cfg("IDX", "TYPE_UINT32", [1])])
    write_backend_model(repo, "repeat_dynamic", config(
        "repeat_dynamic", *repeat_io, 8, backend="repeat",
        extra=decoupled + "\ndynamic_batching {\n  max_queue_delay_microseconds: 300000\n"
        "  preferred_batch_size: [ 4 ]\n}"))
    write_backend_model(repo, "repeat_sequence", config(
        "repeat_sequence", *repeat_io, 2, backend="repeat",
        extra=decoupled + "\nsequence_batching {\n  max_sequence_idle_microseconds: 5000000\n"
        "  control_input [\n    {\n      name: \"START\"\n      control [\n        {\n"
        "          kind: CONTROL_SEQUENCE_START\n          int32_false_true: [ 0, 1 ]\n"
        "        }\n      ]\n    }\n  ]\n}"))
    # A plugin that knows no senders serving a decoupled model under the dynamic batcher: its
    # batched outputs are split into one FINAL response per request.
    write_backend_model(repo, "identity_decoupled_dynamic", io1_config(
        "identity_decoupled_dynamic", "TYPE_INT32", [-1], 8, backend="identity",
        extra=decoupled + "\ndynamic_batching {\n  max_queue_delay_microseconds: 300000\n"
        "  preferred_batch_size: [ 3 ]\n}"))


def write_fixtures(root):
    builders = {"types": fixture_types, "features": fixture_features, "broken": fixture_broken,
                "single_good": write_simple, "management": fixture_management,
                "torch": fixture_torch, "torch_broken": fixture_torch_broken,
                "batching": fixture_batching, "stats": fixture_stats,
                "sequence": fixture_sequence, "ragged": fixture_ragged,
                "decoupled": fixture_decoupled}
    for repo, build in builders.items():
        path = os.path.join(root, repo)
        os.makedirs(path, exist_ok=True)
        build(path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", metavar="DIR", help="write the example model repository")
    parser.add_argument("--fixtures", metavar="DIR", help="write the test repositories")
    args = parser.parse_args(argv)
    if not args.examples and not args.fixtures:
        parser.error("give --examples DIR and/or --fixtures DIR")
    if args.examples:
        write_examples(args.examples)
    if args.fixtures:
        write_fixtures(args.fixtures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
