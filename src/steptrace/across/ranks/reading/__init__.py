"""The rank traces of one job, found and each reduced to its summary: where they are
(``locations``), what they say of their job before loading (``said``), which rank each is
(``discover``), one rank's work (``work``) run here, in a pool or on Dask (``executors``),
every rank gathered with failures apart (``gather``), and the progress bar."""
