"""Training jobs: a task's training recipe run on the platform's data into a registered candidate model.

:mod:`dynaforge.training.runner` is the job (the actor's side: data in, candidate out, progress and cancellation);
:mod:`dynaforge.training.child` is the process that runs the recipe, confined and without the database.
"""
