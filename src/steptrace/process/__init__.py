"""How steptrace runs as a process among others: Ctrl-C (``ctrl_c``), its worker
processes (``lifetime``), the CPU it may use (``machine``) and the clock a comparison
reads (``clocks``), deadlines (``watchdog``), the user's code kept from its output and
exit (``user_code``), Kineto's own lines kept off stderr (``quiet``), files written
whole or not at all (``outputs``)."""
