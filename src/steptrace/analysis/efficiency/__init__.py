"""How close the work comes to the hardware: the roofline, each operator's cost model (FLOPs
and bytes from its recorded inputs), the kinds of kernels, and the devices' peaks."""
