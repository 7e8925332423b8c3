//! A small BERT configuration for the BERT tests (`bert.rs`, `cuda.rs`).

use dlp_tensor::bert::{BertConfig, HiddenAct};

/// A BERT of vocabulary `v`, hidden size `h`, `layers` layers of `heads` heads and
/// intermediate size `inter` (GELU, 16 positions, 2 token types, untied).
pub fn config(v: usize, h: usize, layers: usize, heads: usize, inter: usize) -> BertConfig {
    BertConfig {
        vocab_size: v,
        hidden_size: h,
        num_hidden_layers: layers,
        num_attention_heads: heads,
        intermediate_size: inter,
        hidden_act: HiddenAct::Gelu,
        max_position_embeddings: 16,
        type_vocab_size: 2,
        layer_norm_eps: 1e-12,
        tie_word_embeddings: false,
    }
}
