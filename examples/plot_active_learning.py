"""
Model change against uncertainty sampling
=========================================

The paper's Binary-Clusters set (760 points in 2-D, two classes in several
clusters each), two initial labels, batches of five queries chosen by four
strategies, each in its own model. Model change (``mc:gr``) and V-opt
explore: they label every cluster early. Uncertainty sampling
(``unc:logistic``) keeps querying near the first boundary it finds.

A small version of ``skmcal run --dataset binary-clusters`` (see
:doc:`/user_guide/cli`): 2 trials of 12 batches.
"""

from skmcal.experiment import run_experiment
from skmcal.plotting import plot_accuracy, plot_choices

result = run_experiment(
    "binary-clusters",
    strategies=["mc:gr", "vopt:gr", "unc:logistic", "rand:gr"],
    batch_size=5,
    iterations=12,
    trials=2,
    seed=0,
    progress=False,
)
print(result.summary().round(3).to_string(index=False))

# %%
# Accuracy on the unlabeled points, mean ± std over the trials.
accuracy = plot_accuracy(result.results, title="binary-clusters")

# %%
# The points each strategy labeled in the first trial, coloured by the
# iteration of the query.
choices = plot_choices(result.X, result.y, result.choices, n_cols=2, title="binary-clusters")
