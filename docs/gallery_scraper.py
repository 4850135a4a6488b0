"""sphinx-gallery scraper for the figures that skmcal.plotting returns.

skmcal draws on matplotlib's Agg canvas without pyplot, so sphinx-gallery's
matplotlib scraper does not see its figures. This one saves every
``matplotlib.figure.Figure`` that a code block of an example leaves in the
example's namespace, that no earlier block saved and that pyplot does not
manage (those are left to the matplotlib scraper).
"""

from matplotlib.figure import Figure
from sphinx_gallery.scrapers import figure_rst

_MARK = "_skmcal_gallery_saved"


def skmcal_figures(block, block_vars, gallery_conf):
    """Save the new figures of a code block; return their reST."""
    paths = []
    for value in list(block_vars["example_globals"].values()):
        # Figures made by pyplot have a manager: the matplotlib scraper saves those.
        own = isinstance(value, Figure) and value.canvas.manager is None
        if own and not getattr(value, _MARK, False):
            setattr(value, _MARK, True)
            path = next(block_vars["image_path_iterator"])
            value.savefig(path, dpi=100)
            paths.append(path)
    return figure_rst(paths, gallery_conf["src_dir"])
