{{/* The objects' name: the release's, with the chart's name unless it already holds it. */}}
{{- define "nereid.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "nereid.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nereid.labels" -}}
{{ include "nereid.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The model repository's flag value: the object-storage URL, else the PVC's mount. */}}
{{- define "nereid.modelRepository" -}}
{{- $m := .Values.modelRepository -}}
{{- if $m.url -}}
{{- if not (regexMatch "^(s3|gs|as)://" $m.url) -}}
{{- fail (printf "modelRepository.url must be an s3://, gs:// or as:// URL (got %q); a local folder is a PersistentVolumeClaim (modelRepository.pvc.claimName)" $m.url) -}}
{{- end -}}
{{- $m.url -}}
{{- else if $m.pvc.claimName -}}
/models
{{- else -}}
{{- fail "modelRepository: set url (s3://, gs:// or as://) or pvc.claimName (a PersistentVolumeClaim holding the repository)" -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the object store's credentials: the one named, or this chart's. */}}
{{- define "nereid.credentialsSecret" -}}
{{- $m := .Values.modelRepository -}}
{{- if and $m.secretName $m.credentials -}}
{{- fail "modelRepository: set secretName or credentials, not both" -}}
{{- else if and (or $m.secretName $m.credentials) (not $m.url) -}}
{{- fail "modelRepository: secretName and credentials are for an object-storage url" -}}
{{- else if $m.secretName -}}
{{- $m.secretName -}}
{{- else if $m.credentials -}}
{{- include "nereid.fullname" . }}-repository
{{- end -}}
{{- end -}}
