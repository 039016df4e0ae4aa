"""The figures a report puts on the parent run keep the seed in view: MLflow's file list cuts long
names, so a matrixed plot's axes are cut to their initials."""

from flows.track.reports import figures, short_label


def test_a_matrixed_plots_axes_are_cut_to_initials():
    assert short_label("long_lag_lstm[forget_bias=3,seed=0]") == "long_lag_lstm_fb3_s0"
    assert short_label("gaze[seed=12]") == "gaze_s12"
    assert short_label("bleu_by_length[rnn]") == "bleu_by_length_rnn"  # a single-axis label: its value
    assert short_label("timing") == "timing"


def test_twenty_seeds_of_one_plot_differ_within_their_first_twenty_characters(tmp_path):
    png = tmp_path / "p.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n")
    named = figures({f"long_lag_lstm[forget_bias={b},seed={s}]": str(png) for b in (0, 3) for s in range(10)})
    assert len({n[:20] for n in named}) == 20
    assert "long_lag_lstm_fb3_s7.png" in named
