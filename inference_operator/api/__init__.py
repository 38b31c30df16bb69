"""The InferenceService API: its types (pydantic), fixed names, the CRD generated from them, samples.

The ground floor's own floor: it imports nothing else of the package."""
