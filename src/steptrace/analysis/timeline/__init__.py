"""The steps on the timeline: lanes per thread and stream, gaps, merged bars, launch queues."""
