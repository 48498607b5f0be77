# configuration_moetrain.py — the Hugging Face configuration of a model exported
# by `moetrain export --format hf` when no transformers class holds it exactly.
# Written by the moetrain project and copied unchanged into every such export;
# loaded with trust_remote_code=True (config.json's "auto_map").
#
# `moetrain_model` is the run's [model] table exactly as moetrain reads it
# (every key of docs/config.md's [model] section, defaults included): the
# modeling code reads the architecture from there, and `moetrain import`
# reads it back. The usual Hugging Face names (hidden_size,
# num_hidden_layers, ...) are derived from it for tools that look for them.
try:
    from transformers import PreTrainedConfig
except ImportError:  # transformers 4
    from transformers import PretrainedConfig as PreTrainedConfig

# The export format of this code: config.json's "moetrain_code_version".
# Bumped whenever the tensor names or the meaning of a key change.
MOETRAIN_CODE_VERSION = 1


class MoetrainConfig(PreTrainedConfig):
    model_type = "moetrain"
    keys_to_ignore_at_inference = ["cache", "past_key_values"]

    def __init__(self, moetrain_model=None, moetrain_code_version=MOETRAIN_CODE_VERSION,
                 max_position_embeddings=2048, **kwargs):
        if moetrain_code_version != MOETRAIN_CODE_VERSION:
            raise ValueError(
                f"config.json: moetrain_code_version {moetrain_code_version} was written for another version of "
                f"this code (version {MOETRAIN_CODE_VERSION}); export the model again with a matching moetrain")
        m = dict(moetrain_model or {})
        self.moetrain_model = m
        self.moetrain_code_version = moetrain_code_version
        self.max_position_embeddings = max_position_embeddings
        self.vocab_size = m.get("vocab_size")
        self.hidden_size = m.get("d_model")
        self.num_hidden_layers = m.get("n_layers")
        self.num_attention_heads = m.get("n_heads")
        self.num_key_value_heads = m.get("n_kv_heads")
        self.rms_norm_eps = m.get("norm_eps")
        self.use_cache = kwargs.pop("use_cache", True)
        kwargs["tie_word_embeddings"] = bool(m.get("tied_embeddings", kwargs.get("tie_word_embeddings", False)))
        super().__init__(**kwargs)
