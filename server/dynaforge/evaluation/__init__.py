"""Model evaluation: scoring models on a task's data sets and ranking them on its leaderboard.

:mod:`dynaforge.evaluation.scoring` computes what an evaluation reports for one model on one data set;
:mod:`dynaforge.evaluation.dynascore` combines those figures across models into the leaderboard's Dynascore.
Both are pure Python: the API process imports them and never imports torch or numpy.
"""
