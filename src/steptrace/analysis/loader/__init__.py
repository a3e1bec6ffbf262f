"""The DataLoader's workers beside a trace: their files read (``log``), their figures
(``figure``)."""
