"""Reports: pictures of what an engine computed, kept out of the engine (``conflicts``: a conflict pass in 2-D;
``html``: one page of tables and plots that opens offline, as a replay's ``report.html``)."""
