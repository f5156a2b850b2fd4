"""A job's result in a researcher's formats (quarry.exports.job_export): BibTeX, RIS, CSL-JSON, CSV and
a Markdown report, with the bibliography model and its rules beside them."""
