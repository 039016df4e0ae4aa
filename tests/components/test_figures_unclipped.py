"""A saved figure keeps text that reaches past its edge (timing.png's right-hand title was cut)."""

from components.context import Context
from components.outputs import pyplot, save_figure


def test_text_past_the_right_edge_widens_the_png_instead_of_being_cut(tmp_path):
    from PIL import Image

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    fig.text(0.9, 0.5, "a right-hand title that reaches well past the figure's edge")
    path = save_figure(Context(tmp_path), fig, "wide.png")
    width, _ = Image.open(path).size
    assert width > 3 * 110 * 1.5  # the text's extent, not the 330 px of the figure
