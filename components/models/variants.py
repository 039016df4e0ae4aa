"""Named variants, tiny (tests, CPU) to the papers' sizes; each sets sizes and names its family builder."""

from __future__ import annotations

from components.models.captioner import Captioner, CaptionerConfig
from components.models.cnn import CNN, CNNConfig
from components.models.conv1d import Conv1DConfig, Conv1DModel
from components.models.mlp import MLP, MLPConfig
from components.models.recurrent_model import RecurrentConfig, build_recurrent
from components.models.registry import variant
from components.models.rnn_encoder import Seq2SeqConfig
from components.models.rnnsearch import RNNPaperConfig, build_rnn_paper
from components.models.seq2seq import build_seq2seq
from components.models.transformer import Transformer, TransformerConfig
from components.models.transformer_models import EncoderConfig, TransformerEncoderModel
from components.models.vit import ViT, ViTConfig

# -- one-to-one baseline (B1) ------------------------------------------------------------------------


@variant("mlp-small", MLP)
def mlp_small():
    """MLP over a fixed 32-step window: cannot take longer inputs (B1)."""
    return MLPConfig()


# -- recurrent (B1, B2) ------------------------------------------------------------------------------


def _rnn(cell, **kw):
    return RecurrentConfig(cell=cell, **kw)


@variant("rnn-tiny", build_recurrent)
def rnn_tiny():
    """Vanilla tanh RNN, hidden 16 (tests)."""
    return _rnn("rnn", embed_dim=8, hidden_size=16)


@variant("rnn-small", build_recurrent)
def rnn_small():
    """Vanilla tanh RNN, hidden 64 (quick profile probes)."""
    return _rnn("rnn")


@variant("lstm-tiny", build_recurrent)
def lstm_tiny():
    """LSTM with forget gate, hidden 16 (tests)."""
    return _rnn("lstm", embed_dim=8, hidden_size=16)


@variant("lstm-small", build_recurrent)
def lstm_small():
    """LSTM with forget gate (bias 1.0), hidden 64."""
    return _rnn("lstm")


@variant("lstm1997-small", build_recurrent)
def lstm1997_small():
    """1997 LSTM: input/output gates and constant error carousel, no forget gate; hidden 64."""
    return _rnn("lstm1997")


@variant("gru-tiny", build_recurrent)
def gru_tiny():
    """GRU, hidden 16 (tests)."""
    return _rnn("gru", embed_dim=8, hidden_size=16)


@variant("gru-small", build_recurrent)
def gru_small():
    """GRU, hidden 64."""
    return _rnn("gru")


@variant("bilstm-small", build_recurrent)
def bilstm_small():
    """Bidirectional 2-layer LSTM tagger, hidden 64 per direction."""
    return _rnn("lstm", bidirectional=True, num_layers=2, head="many_to_many")


@variant("lstm-2x256", build_recurrent)
def lstm_2x256():
    """Two-layer LSTM, hidden 256 (standard profile)."""
    return _rnn("lstm", embed_dim=128, hidden_size=256, num_layers=2, dropout=0.2)


@variant("lstm-generator-small", build_recurrent)
def lstm_generator_small():
    """One-to-many LSTM: generate out_len steps from one input vector."""
    return _rnn("lstm", head="one_to_many")


# -- Transformer (B1-B4) -----------------------------------------------------------------------------


@variant("transformer-tiny", Transformer)
def transformer_tiny():
    """Encoder-decoder Transformer, d_model 32, 1+1 layers (tests)."""
    return TransformerConfig(d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1, n_decoder_layers=1)


@variant("transformer-small", Transformer)
def transformer_small():
    """Encoder-decoder Transformer, d_model 64, 2+2 layers, pre-LN (quick-profile translation)."""
    return TransformerConfig(norm_first=True)


@variant("transformer-medium", Transformer)
def transformer_medium():
    """Encoder-decoder Transformer, d_model 128, d_ff 512, 3+3 pre-LN layers (standard-profile translation)."""
    return TransformerConfig(d_model=128, d_ff=512, n_encoder_layers=3, n_decoder_layers=3, norm_first=True)


@variant("transformer-base", Transformer)
def transformer_base():
    """Paper size: Transformer base (Vaswani 2017), d_model 512, 8 heads, d_ff 2048, 6+6, 37k joint vocab."""
    return TransformerConfig(
        src_vocab_size=37000,
        tgt_vocab_size=37000,
        d_model=512,
        n_heads=8,
        d_ff=2048,
        n_encoder_layers=6,
        n_decoder_layers=6,
        dropout=0.1,  # residual dropout on each sub-layer's output and the embedding sums, as the paper
        attention_dropout=0.0,  # the paper puts none on the attention weights
        ffn_dropout=0.0,  # nor on the feed-forward hidden layer
        share_embeddings=True,
    )


@variant("transformer-big", Transformer)
def transformer_big():
    """Paper size: Transformer big (Vaswani 2017), d_model 1024, 16 heads, d_ff 4096, 6+6, dropout 0.3."""
    return TransformerConfig(
        src_vocab_size=37000,
        tgt_vocab_size=37000,
        d_model=1024,
        n_heads=16,
        d_ff=4096,
        n_encoder_layers=6,
        n_decoder_layers=6,
        dropout=0.3,  # residual and embedding dropout only, as transformer-base
        attention_dropout=0.0,
        ffn_dropout=0.0,
        share_embeddings=True,
    )


@variant("transformer-encoder-tiny", TransformerEncoderModel)
def transformer_encoder_tiny():
    """Encoder-only classifier (masked mean pool), d_model 32, 1 layer (tests)."""
    return EncoderConfig(d_model=32, n_heads=2, d_ff=64, num_layers=1)


@variant("transformer-encoder-small", TransformerEncoderModel)
def transformer_encoder_small():
    """Encoder-only classifier, d_model 64, 2 pre-LN layers (the probes' Transformer)."""
    return EncoderConfig()


@variant("transformer-tagger-small", TransformerEncoderModel)
def transformer_tagger_small():
    """Encoder-only tagger (one label per position), d_model 64, 2 layers."""
    return EncoderConfig(head="many_to_many")


@variant("transformer-local-small", TransformerEncoderModel)
def transformer_local_small():
    """Encoder-only classifier with restricted self-attention (window r = 4)."""
    return EncoderConfig(window=4)


@variant("transformer-lm-tiny", TransformerEncoderModel)
def transformer_lm_tiny():
    """Decoder-only language model (causal, tied embeddings), d_model 32, 1 layer (tests)."""
    return EncoderConfig(
        head="many_to_many",
        num_classes=0,
        causal=True,
        tie_embeddings=True,
        d_model=32,
        n_heads=2,
        d_ff=64,
        num_layers=1,
    )


@variant("transformer-lm-small", TransformerEncoderModel)
def transformer_lm_small():
    """Decoder-only language model (causal, tied embeddings), d_model 128, 4 layers."""
    return EncoderConfig(
        head="many_to_many",
        num_classes=0,
        causal=True,
        tie_embeddings=True,
        d_model=128,
        n_heads=4,
        d_ff=512,
        num_layers=4,
    )


# -- recurrent encoder-decoders (B3 without / with attention) -----------------------------------------


@variant("seq2seq-tiny", build_seq2seq)
def seq2seq_tiny():
    """GRU encoder-decoder passing only the final state, hidden 16 (tests)."""
    return Seq2SeqConfig(embed_dim=8, hidden_size=16)


@variant("seq2seq-small", build_seq2seq)
def seq2seq_small():
    """GRU encoder-decoder passing only the final state (Sutskever 2014's design), hidden 128 (quick profile)."""
    return Seq2SeqConfig(embed_dim=64, hidden_size=128)


@variant("seq2seq-reverse-small", build_seq2seq)
def seq2seq_reverse_small():
    """As seq2seq-small with the source fed backwards (Sutskever 2014)."""
    return Seq2SeqConfig(embed_dim=64, hidden_size=128, reverse_source=True)


@variant("luong-tiny", build_seq2seq)
def luong_tiny():
    """Luong dot attention over a GRU encoder, hidden 16 (tests)."""
    return Seq2SeqConfig(attention="dot", embed_dim=8, hidden_size=16)


@variant("luong-dot-small", build_seq2seq)
def luong_dot_small():
    """Luong dot attention (score h_t^T h_s), GRU, hidden 128."""
    return Seq2SeqConfig(attention="dot", embed_dim=64, hidden_size=128)


@variant("luong-general-small", build_seq2seq)
def luong_general_small():
    """Luong general attention (score h_t^T W_a h_s), GRU, hidden 128."""
    return Seq2SeqConfig(attention="general", embed_dim=64, hidden_size=128)


@variant("luong-concat-small", build_seq2seq)
def luong_concat_small():
    """Luong concat attention (score v_a^T tanh(W_a [h_t; h_s])), GRU, hidden 128."""
    return Seq2SeqConfig(attention="concat", embed_dim=64, hidden_size=128)


@variant("bahdanau-tiny", build_seq2seq)
def bahdanau_tiny():
    """RNNSearch: bidirectional GRU encoder, additive attention, hidden 16 (tests)."""
    return Seq2SeqConfig(attention="bahdanau", bidirectional_encoder=True, embed_dim=8, hidden_size=16)


@variant("bahdanau-small", build_seq2seq)
def bahdanau_small():
    """RNNSearch: bidirectional GRU encoder, additive attention, hidden 128."""
    return Seq2SeqConfig(attention="bahdanau", bidirectional_encoder=True, embed_dim=64, hidden_size=128)


@variant("sutskever-4x1000", build_seq2seq)
def sutskever_4x1000():
    """Paper size: Sutskever 2014, 4-layer 1000-unit LSTMs, 1000-dim embeddings, 160k/80k vocab, reversed source."""
    return Seq2SeqConfig(
        cell="lstm",
        src_vocab_size=160000,
        tgt_vocab_size=80000,
        embed_dim=1000,
        hidden_size=1000,
        num_layers=4,
        reverse_source=True,
    )


@variant("rnnsearch-1000", build_seq2seq)
def rnnsearch_1000():
    """Paper size: Bahdanau 2015 RNNsearch, 1000-unit GRUs, 620-dim embeddings, 30k vocab, 500 maxout units."""
    return Seq2SeqConfig(
        attention="bahdanau",
        cell="gru",
        bidirectional_encoder=True,
        src_vocab_size=30000,
        tgt_vocab_size=30000,
        embed_dim=620,
        hidden_size=1000,
        attention_dim=1000,
        maxout_dim=500,
    )


def _bahdanau_2015(**kw) -> RNNPaperConfig:
    """Bahdanau 2015 (A.1.1, A.2 and B.1): the paper's GRU 1000, embeddings 620, maxout 500, 30k words a side, init."""
    sizes = dict(src_vocab_size=30000, tgt_vocab_size=30000, embed_dim=620, hidden_size=1000, maxout_dim=500)
    return RNNPaperConfig(**{**sizes, "cell": "gru", "gru": "bahdanau", "init": "paper", **kw})


@variant("rnnsearch-50", build_rnn_paper)
def rnnsearch_50():
    """Paper model: RNNsearch (Bahdanau 2015), bidirectional GRU 1000 (A.1.1), attention 1000, s_0 from h<-_1."""
    return _bahdanau_2015(attention="bahdanau", bidirectional_encoder=True, attention_dim=1000)


@variant("rnnencdec-50", build_rnn_paper)
def rnnencdec_50():
    """Paper model: RNNencdec (Cho 2014's design; Bahdanau 2015's baseline), RNNsearch's decoder fed c = tanh(V h_T)."""
    return _bahdanau_2015(attention="none")


@variant("rnnsearch-tiny", build_rnn_paper)
def rnnsearch_tiny():
    """rnnsearch-50 at hidden 16 with PyTorch's GRU (tests)."""
    return RNNPaperConfig(attention="bahdanau", bidirectional_encoder=True, embed_dim=8, hidden_size=16, maxout_dim=8)


@variant("rnnencdec-tiny", build_rnn_paper)
def rnnencdec_tiny():
    """rnnencdec-50 at hidden 16 with PyTorch's GRU (tests)."""
    return RNNPaperConfig(attention="none", embed_dim=8, hidden_size=16, maxout_dim=8)


# -- convolution over sequences (B1, B4) --------------------------------------------------------------


@variant("conv1d-tiny", Conv1DModel)
def conv1d_tiny():
    """Dilated residual 1D CNN, 16 channels, 2 layers (tests)."""
    return Conv1DConfig(embed_dim=8, channels=16, num_layers=2)


@variant("conv1d-small", Conv1DModel)
def conv1d_small():
    """Dilated residual 1D CNN, 64 channels, 4 layers (receptive field 31)."""
    return Conv1DConfig()


@variant("conv1d-tagger-small", Conv1DModel)
def conv1d_tagger_small():
    """Dilated residual 1D CNN tagger (one label per position)."""
    return Conv1DConfig(head="many_to_many")


# -- vision ------------------------------------------------------------------------------------------


@variant("vit-tiny", ViT)
def vit_tiny():
    """ViT for 8x8 digits: patch 2 (16 patches), d_model 32, 2 layers."""
    return ViTConfig(image_size=8, patch=2, d_model=32, n_heads=2, d_ff=64, num_layers=2)


@variant("vit-small", ViT)
def vit_small():
    """ViT for 28x28 MNIST: patch 7 (16 patches), d_model 64, 4 layers."""
    return ViTConfig()


@variant("vit-b16", ViT)
def vit_b16():
    """Paper size: ViT-B/16 (Dosovitskiy 2021), 224x224, d_model 768, 12 heads, d_ff 3072, 12 layers."""
    return ViTConfig(
        image_size=224,
        patch=16,
        channels=3,
        num_classes=1000,
        d_model=768,
        n_heads=12,
        d_ff=3072,
        num_layers=12,
        dropout=0.1,
    )


@variant("cnn-tiny", CNN)
def cnn_tiny():
    """Two conv blocks (16, 32 channels) for 8x8 digits."""
    return CNNConfig(image_size=8, widths=(16, 32))


@variant("cnn-small", CNN)
def cnn_small():
    """Two conv blocks (32, 64 channels) for 28x28 MNIST."""
    return CNNConfig()


@variant("captioner-tiny", Captioner)
def captioner_tiny():
    """Show-Attend-Tell captioner for 8x8 images (4 regions), GRU decoder, hidden 16 (tests)."""
    return CaptionerConfig(image_size=8, widths=(8, 16), embed_dim=8, hidden_size=16, attention_dim=16, cell="gru")


@variant("captioner-small", Captioner)
def captioner_small():
    """Show-Attend-Tell captioner for 28x28 digit strips (49 regions), LSTM decoder, hidden 64."""
    return CaptionerConfig()
