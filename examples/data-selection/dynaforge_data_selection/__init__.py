"""A Dynaforge task plugin in the style of DataPerf's data selection: participants submit data, not a model. Each
picks at most a budget of training items from a pool the task owner uploads; the platform trains the task's fixed
recipe on the selection and scores it on a test set the participants never see."""
