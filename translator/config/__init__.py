"""Configuration (ground): typed, validated sections, and their loading from YAML and `--set`.

Imported by every wing; imports nothing of translator but `errors`. The public names are
re-exported here, so `from translator.config import Config, load_config` reads as before.
"""

from translator.config.load import (
    apply_override,
    config_from_dict,
    given_settings,
    load_config,
    read_yaml,
    save_config,
)
from translator.config.sections import (
    Config,
    DataConfig,
    DecodeConfig,
    DistillConfig,
    ModelConfig,
    ServeConfig,
    TokenizerConfig,
    TrainConfig,
)

__all__ = [
    "Config",
    "DataConfig",
    "DecodeConfig",
    "DistillConfig",
    "ModelConfig",
    "ServeConfig",
    "TokenizerConfig",
    "TrainConfig",
    "apply_override",
    "config_from_dict",
    "given_settings",
    "load_config",
    "read_yaml",
    "save_config",
]
