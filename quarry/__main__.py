from quarry.cli import app

app(prog_name="quarry")
