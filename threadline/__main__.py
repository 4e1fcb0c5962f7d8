from threadline.cli import main

main()
