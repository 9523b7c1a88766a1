#!/bin/sh
echo "exiting 3"
exit 3
