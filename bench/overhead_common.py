"""What the *_overhead.py benchmarks share: the end of a run."""
import shutil


def finish(text, markdown, work):
    """Prints the table, writes it to `markdown` too when given, and removes the scratch folder."""
    print(text)
    if markdown:
        with open(markdown, "w") as f:
            f.write(text)
    shutil.rmtree(work, ignore_errors=True)
