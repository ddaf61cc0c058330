"""Admission: AdmissionReview in, verdict out; the HTTPS webhook; the audit of a live cluster."""
