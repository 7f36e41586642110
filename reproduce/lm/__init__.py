"""The language-model layer every experiment shares: the model registry (:mod:`.models`), prompt formats, the
batched inference engine, LoRA finetuning, steering hooks, the local judge, and the memory plan."""
