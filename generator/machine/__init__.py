"""The machine below the runner: what it is (environment), what it can do (the limits probe and its one cache,
shared by `perfsite run` and `perfsite profile`) and how a session is opened on it (session options,
providers). `versions`, `diff`, `oneshot` and the analysis read the machine from here, never from the runner.
"""
