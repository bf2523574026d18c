
# --- appended by scripts/llama_server_suite.sh --------------------------------
# Nothing can be downloaded where the suite runs: every preset starts on the
# local model named by COHORT_SUITE_MODEL, and the presets' download step
# (ServerPreset.load_all, run once per session) has nothing to fetch.
_start_as_preset = ServerProcess.start


def _start_on_local_model(self, *args, **kwargs):
    self.model_hf_repo = None
    self.model_hf_file = None
    self.model_url = None
    self.model_file = os.environ["COHORT_SUITE_MODEL"]
    return _start_as_preset(self, *args, **kwargs)


ServerProcess.start = _start_on_local_model
ServerPreset.load_all = staticmethod(lambda: None)
