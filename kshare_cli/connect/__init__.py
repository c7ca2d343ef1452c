"""Connection settings shared by the control plane and the data plane."""
