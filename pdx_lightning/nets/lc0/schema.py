"""Lc0's weight-file schema (``pblczero.Net``, lczero-common ``proto/net.proto``), as data.

The schema is declared here as data and turned into protobuf message classes at import
time (``descriptor_pb2`` → a private descriptor pool), so there is no protoc step and no
generated code tied to one protobuf release. Only the messages and fields the attention-body
and residual-tower networks use are declared; proto2 parsing keeps every other field as an
unknown field, so nothing in a file is lost or misread. Field numbers follow net.proto exactly.
Reading, writing and the layer encodings are in ``format.py``.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

LINEAR16, FLOAT16, BFLOAT16, FLOAT32 = 1, 2, 3, 4
ENCODINGS = {"linear16": LINEAR16, "float16": FLOAT16, "bfloat16": BFLOAT16, "float32": FLOAT32}
ENCODING_NAMES = {v: k.upper() for k, v in ENCODINGS.items()}
MAGIC = 0x1C0

# NetworkFormat enums (net.proto)
INPUT_NAMES = {
    0: "INPUT_UNKNOWN",
    1: "INPUT_CLASSICAL_112_PLANE",
    2: "INPUT_112_WITH_CASTLING_PLANE",
    3: "INPUT_112_WITH_CANONICALIZATION",
    4: "INPUT_112_WITH_CANONICALIZATION_HECTOPLIES",
    132: "INPUT_112_WITH_CANONICALIZATION_HECTOPLIES_ARMAGEDDON",
    5: "INPUT_112_WITH_CANONICALIZATION_V2",
    133: "INPUT_112_WITH_CANONICALIZATION_V2_ARMAGEDDON",
}
NETWORK_NAMES = {
    0: "NETWORK_UNKNOWN",
    1: "NETWORK_CLASSICAL",
    2: "NETWORK_SE",
    3: "NETWORK_CLASSICAL_WITH_HEADFORMAT",
    4: "NETWORK_SE_WITH_HEADFORMAT",
    5: "NETWORK_ONNX",
    6: "NETWORK_ATTENTIONBODY_WITH_HEADFORMAT",
    7: "NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT",
    134: "NETWORK_AB_LEGACY_WITH_MULTIHEADFORMAT",
}
POLICY_NAMES = {0: "POLICY_UNKNOWN", 1: "POLICY_CLASSICAL", 2: "POLICY_CONVOLUTION", 3: "POLICY_ATTENTION"}
VALUE_NAMES = {0: "VALUE_UNKNOWN", 1: "VALUE_CLASSICAL", 2: "VALUE_WDL", 3: "VALUE_PARAM"}
ACTIVATION_NAMES = {
    0: "ACTIVATION_DEFAULT",
    1: "ACTIVATION_MISH",
    2: "ACTIVATION_RELU",
    3: "ACTIVATION_NONE",
    4: "ACTIVATION_TANH",
    5: "ACTIVATION_SIGMOID",
    6: "ACTIVATION_SELU",
    7: "ACTIVATION_SWISH",
    8: "ACTIVATION_RELU_2",
    9: "ACTIVATION_SOFTMAX",
}
EMBEDDING_NAMES = {0: "INPUT_EMBEDDING_NONE", 1: "INPUT_EMBEDDING_PE_MAP", 2: "INPUT_EMBEDDING_PE_DENSE"}
INPUT_CLASSICAL_112_PLANE = 1
OUTPUT_WDL = 2
NETWORK_ONNX = 5
NETWORK_ATTENTIONBODY_WITH_HEADFORMAT, NETWORK_ATTENTIONBODY_WITH_MULTIHEADFORMAT = 6, 7
ATTENTION_BODY_NETWORKS = (6, 7, 134)
POLICY_ATTENTION, VALUE_WDL, MOVES_LEFT_NONE, MOVES_LEFT_V1 = 3, 2, 0, 1
DEFAULT_ACTIVATION_RELU, DEFAULT_ACTIVATION_MISH = 0, 1
ACTIVATION_DEFAULT, ACTIVATION_MISH, ACTIVATION_RELU, ACTIVATION_SWISH = 0, 1, 2, 7
INPUT_EMBEDDING_NONE, INPUT_EMBEDDING_PE_MAP, INPUT_EMBEDDING_PE_DENSE = 0, 1, 2

_T = descriptor_pb2.FieldDescriptorProto
_SCALAR = {
    "float": _T.TYPE_FLOAT,
    "bytes": _T.TYPE_BYTES,
    "uint32": _T.TYPE_UINT32,
    "string": _T.TYPE_STRING,
    "fixed32": _T.TYPE_FIXED32,
    "enum": _T.TYPE_UINT32,
}  # enums kept numeric: unknown values survive

# message -> [(field, number, type, repeated)]; a type that is not a scalar names a message.
_SCHEMA: dict[str, list[tuple[str, int, str, bool]]] = {
    "EngineVersion": [("major", 1, "uint32", False), ("minor", 2, "uint32", False), ("patch", 3, "uint32", False)],
    "Layer": [
        ("min_val", 1, "float", False),
        ("max_val", 2, "float", False),
        ("params", 3, "bytes", False),
        ("encoding", 4, "enum", False),
        ("dims", 5, "uint32", True),
    ],
    "ConvBlock": [
        (n, i, "Layer", False)
        for i, n in enumerate(("weights", "biases", "bn_means", "bn_stddivs", "bn_gammas", "bn_betas"), 1)
    ],
    "SEunit": [(n, i, "Layer", False) for i, n in enumerate(("w1", "b1", "w2", "b2"), 1)],
    "Residual": [("conv1", 1, "ConvBlock", False), ("conv2", 2, "ConvBlock", False), ("se", 3, "SEunit", False)],
    "Smolgen": [
        (n, i, "Layer", False)
        for i, n in enumerate(
            (
                "compress",
                "dense1_w",
                "dense1_b",
                "ln1_gammas",
                "ln1_betas",
                "dense2_w",
                "dense2_b",
                "ln2_gammas",
                "ln2_betas",
            ),
            1,
        )
    ],
    "MHA": [
        (n, i, "Layer", False)
        for i, n in enumerate(("q_w", "q_b", "k_w", "k_b", "v_w", "v_b", "dense_w", "dense_b"), 1)
    ]
    + [
        ("smolgen", 9, "Smolgen", False),
        ("rpe_q", 10, "Layer", False),
        ("rpe_k", 11, "Layer", False),
        ("rpe_v", 12, "Layer", False),
    ],
    "FFN": [(n, i, "Layer", False) for i, n in enumerate(("dense1_w", "dense1_b", "dense2_w", "dense2_b"), 1)],
    "EncoderLayer": [
        ("mha", 1, "MHA", False),
        ("ln1_gammas", 2, "Layer", False),
        ("ln1_betas", 3, "Layer", False),
        ("ffn", 4, "FFN", False),
        ("ln2_gammas", 5, "Layer", False),
        ("ln2_betas", 6, "Layer", False),
    ],
    "PolicyHead": [
        (n, i, "Layer", False)
        for i, n in enumerate(
            ("ip_pol_w", "ip_pol_b", "ip2_pol_w", "ip2_pol_b", "ip3_pol_w", "ip3_pol_b", "ip4_pol_w"), 1
        )
    ]
    + [("pol_encoder", 8, "EncoderLayer", True), ("pol_headcount", 9, "uint32", False)],
    "ValueHead": [
        (n, i, "Layer", False)
        for i, n in enumerate(("ip_val_w", "ip_val_b", "ip1_val_w", "ip1_val_b", "ip2_val_w", "ip2_val_b"), 1)
    ],
    "PolicyHeads": [
        ("ip_pol_w", 1, "Layer", False),
        ("ip_pol_b", 2, "Layer", False),
        ("vanilla", 3, "PolicyHead", False),
        ("optimistic_st", 4, "PolicyHead", False),
        ("soft", 5, "PolicyHead", False),
        ("opponent", 6, "PolicyHead", False),
    ],
    "ValueHeads": [("winner", 1, "ValueHead", False), ("q", 2, "ValueHead", False), ("st", 3, "ValueHead", False)],
    "Weights": [
        ("input", 1, "ConvBlock", False),
        ("residual", 2, "Residual", True),
        ("ip_emb_preproc_w", 37, "Layer", False),
        ("ip_emb_preproc_b", 38, "Layer", False),
        ("ip_emb_w", 25, "Layer", False),
        ("ip_emb_b", 26, "Layer", False),
        ("ip_emb_ln_gammas", 39, "Layer", False),
        ("ip_emb_ln_betas", 40, "Layer", False),
        ("ip_mult_gate", 33, "Layer", False),
        ("ip_add_gate", 34, "Layer", False),
        ("ip_emb_ffn", 41, "FFN", False),
        ("ip_emb_ffn_ln_gammas", 42, "Layer", False),
        ("ip_emb_ffn_ln_betas", 43, "Layer", False),
        ("encoder", 27, "EncoderLayer", True),
        ("headcount", 28, "uint32", False),
        ("pol_encoder", 21, "EncoderLayer", True),
        ("pol_headcount", 24, "uint32", False),
        ("policy1", 11, "ConvBlock", False),
        ("policy", 3, "ConvBlock", False),
        ("ip_pol_w", 4, "Layer", False),
        ("ip_pol_b", 5, "Layer", False),
        ("ip2_pol_w", 17, "Layer", False),
        ("ip2_pol_b", 18, "Layer", False),
        ("ip3_pol_w", 19, "Layer", False),
        ("ip3_pol_b", 20, "Layer", False),
        ("ip4_pol_w", 22, "Layer", False),
        ("value", 6, "ConvBlock", False),
        ("ip_val_w", 29, "Layer", False),
        ("ip_val_b", 30, "Layer", False),
        ("ip1_val_w", 7, "Layer", False),
        ("ip1_val_b", 8, "Layer", False),
        ("ip2_val_w", 9, "Layer", False),
        ("ip2_val_b", 10, "Layer", False),
        ("value_heads", 44, "ValueHeads", False),
        ("policy_heads", 45, "PolicyHeads", False),
        ("moves_left", 12, "ConvBlock", False),
        ("ip_mov_w", 31, "Layer", False),
        ("ip_mov_b", 32, "Layer", False),
        ("ip1_mov_w", 13, "Layer", False),
        ("ip1_mov_b", 14, "Layer", False),
        ("ip2_mov_w", 15, "Layer", False),
        ("ip2_mov_b", 16, "Layer", False),
        ("smolgen_w", 35, "Layer", False),
        ("smolgen_b", 36, "Layer", False),
    ],
    "TrainingParams": [
        ("training_steps", 1, "uint32", False),
        ("learning_rate", 2, "float", False),
        ("mse_loss", 3, "float", False),
        ("policy_loss", 4, "float", False),
        ("accuracy", 5, "float", False),
        ("lc0_params", 6, "string", False),
    ],
    "NetworkFormat": [
        (n, i, "enum", False)
        for i, n in enumerate(
            (
                "input",
                "output",
                "network",
                "policy",
                "value",
                "moves_left",
                "default_activation",
                "smolgen_activation",
                "ffn_activation",
                "input_embedding",
            ),
            1,
        )
    ],
    "Format": [("weights_encoding", 1, "enum", False), ("network_format", 2, "NetworkFormat", False)],
    "OnnxModel": [("model", 1, "bytes", False)],
    "Net": [
        ("magic", 1, "fixed32", False),
        ("license", 2, "string", False),
        ("min_version", 3, "EngineVersion", False),
        ("format", 4, "Format", False),
        ("training_params", 5, "TrainingParams", False),
        ("weights", 10, "Weights", False),
        ("onnx_model", 11, "OnnxModel", False),
    ],
}


def _build_classes() -> dict:
    f = descriptor_pb2.FileDescriptorProto(name="pdx_lc0_net.proto", package="pdx_lc0", syntax="proto2")
    for msg, fields in _SCHEMA.items():
        m = f.message_type.add(name=msg)
        for name, number, typ, repeated in fields:
            fd = m.field.add(name=name, number=number, label=_T.LABEL_REPEATED if repeated else _T.LABEL_OPTIONAL)
            if typ in _SCALAR:
                fd.type = _SCALAR[typ]
            else:
                fd.type, fd.type_name = _T.TYPE_MESSAGE, f".pdx_lc0.{typ}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"pdx_lc0.{name}")) for name in _SCHEMA}


MESSAGES = _build_classes()
Net = MESSAGES["Net"]
Layer = MESSAGES["Layer"]
