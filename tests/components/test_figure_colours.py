"""The parent run's figures say what they show: one colour per architecture, the same in every figure;
a legend that names only the lines drawn; titles that fit their panels."""

import math

import pytest
from matplotlib.colors import to_hex

from components.colours import KNOWN, PALETTE, architecture, colours
from components.context import Context
from components.outputs import pyplot, save_figure
from components.report.bleu_plot import draw

TRANSLATION = ["seq2seq-small", "seq2seq-reverse-small", "luong-dot-small", "bahdanau-small", "transformer"]


def test_the_five_translation_models_get_five_colours():
    assert len(set(colours(TRANSLATION).values())) == 5


def test_an_architecture_keeps_its_colour_whatever_else_a_figure_draws():
    alone = colours(["luong-dot-small"])["luong-dot-small"]
    assert colours(TRANSLATION)["luong-dot-small"] == alone == colours(["rnn", "luong-dot"])["luong-dot"]
    assert colours(["lstm-small (3 seeds)"])["lstm-small (3 seeds)"] == colours(["lstm"])["lstm"]


def test_every_shipped_architecture_has_a_place_of_its_own():
    assert len(KNOWN) <= len(PALETTE) and len({colours([k])[k] for k in KNOWN}) == len(KNOWN)


def test_names_outside_the_shipped_ones_never_share_a_colour_in_one_figure():
    names = [f"mine-{i}" for i in range(8)] + ["lstm", "gru"]
    assert len(set(colours(names).values())) == len(names)
    assert colours(reversed(names))["mine-3"] == colours(names)["mine-3"]  # whatever order a figure draws them in


@pytest.mark.parametrize(
    ("label", "name"),
    [("seq2seq-reverse-small", "seq2seq-reverse"), ("rnn (rho=0.91)", "rnn"), ("arch=gru-small", "gru")],
)
def test_a_label_is_keyed_by_its_architecture(label, name):
    assert architecture(label) == name


def _bleu(models):
    return {
        "buckets": ["1-10", "11-20"],
        "counts": [5, 5],
        "models": {
            m: {"seeds": {"0": [20.0, 10.0]}, "mean": [20, 10], "low": [18, 8], "high": [22, 12]} for m in models
        },
    }


def _line_colours(fig) -> dict[str, str]:
    ax = fig.axes[0]
    return {
        t.get_text().split(" (")[0]: to_hex(h.get_color())
        for h, t in zip(ax.get_legend().legend_handles, ax.get_legend().get_texts())
    }


def test_two_bleu_figures_draw_a_model_in_the_same_colour():
    plt = pyplot()
    one = _line_colours(draw(_bleu(TRANSLATION), "all five"))
    two = _line_colours(draw(_bleu(["transformer", "luong-dot-small"]), "two"))
    plt.close("all")
    assert len(set(one.values())) == 5
    assert two["transformer"] == one["transformer"] and two["luong-dot-small"] == one["luong-dot-small"]


def test_the_legend_names_only_the_lines_drawn(tmp_path):
    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0.2, 0.4], label="lstm-small")
    ax.plot([0, 1], [math.nan, math.nan], label="gru-small")  # not measured: nothing on the plot
    ax.axhline(0.5, ls="--", label="solved")
    ax.legend()
    save_figure(Context(tmp_path), fig, "legend.png")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["lstm-small", "solved"]


def test_two_panels_titles_fit_their_panels(tmp_path):
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    axes[0].set_title("time (cpu, 2 thr)")
    axes[1].set_title(
        "torch.cuda.max_memory_allocated over forward and backward, peak minus the baseline before the step"
    )
    save_figure(Context(tmp_path), fig, "panels.png")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # the figure is closed once saved: draw it again as it was saved
    canvas.draw()
    renderer = canvas.get_renderer()
    for ax in axes:
        title, panel = ax.title.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert title.x0 >= panel.x0 - 20 and title.x1 <= panel.x1 + 20, (ax.get_title(), title, panel)


def test_a_size_sweep_draws_each_size_in_a_colour_of_its_own():
    sweep = colours(["transformer-small (3 seeds)", "transformer-medium (3 seeds)", "luong-dot-small"])
    assert len(set(sweep.values())) == 3
    assert sweep["transformer-medium (3 seeds)"] == colours(["transformer"])["transformer"]  # first by name keeps it
    assert colours(["lstm-small", "gru-small"])["lstm-small"] == colours(["lstm"])["lstm"]  # one size: its colour


def test_a_trimmed_legend_stays_where_its_author_put_it(tmp_path):
    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0.2, 0.4], label="lstm-small")
    ax.plot([0, 1], [math.nan, math.nan], label="gru-small")
    ax.plot([0, 1], [0.3, 0.1], label="rnn-small")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), ncols=2, title="models")
    save_figure(Context(tmp_path), fig, "placed.png")
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["lstm-small", "rnn-small"]
    assert legend.get_title().get_text() == "models" and legend._ncols == 2
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    box, panel = legend.get_window_extent(canvas.get_renderer()), ax.get_window_extent(canvas.get_renderer())
    assert box.x0 > panel.x1 and abs(box.y1 - panel.y1) < 10  # outside on the right, level with the top (its pad)


def test_a_wrapped_title_keeps_a_formula_on_one_line(tmp_path):
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(6, 3))
    formula = r"$\|\partial h_T / \partial h_t\|$"
    axes[0].set_title(f"gradient norm ratio {formula} against the distance from the end of the sequence")
    save_figure(Context(tmp_path), fig, "formula.png")  # a formula broken across lines would raise here
    assert formula in axes[0].get_title().split("\n")
